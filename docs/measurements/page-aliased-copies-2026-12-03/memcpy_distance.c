/* memcpy_distance.c: how long glibc's memcpy takes for N bytes (default 65536) at every
 * distance from destination to source modulo 4 KiB (in steps of 8 bytes, both buffers
 * page-aligned, the source at offset 0), the best of 20 copies, in one thread; and the
 * same copies by a loop of 16-byte vector moves with aligned stores (goal's copy_aliased).
 * Prints the distances at which memcpy took more than three times its median.
 *   gcc -O2 memcpy_distance.c -o memcpy_distance && taskset -c 1 ./memcpy_distance [N] */
#include <emmintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static void vcopy(char *d, const char *s, size_t n) {
    size_t i = (64 - ((size_t)d & 63)) & 63;
    if (i > n) i = n;
    memcpy(d, s, i);
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const void *)(s + i)), b = _mm_loadu_si128((const void *)(s + i + 16)),
                c = _mm_loadu_si128((const void *)(s + i + 32)), e = _mm_loadu_si128((const void *)(s + i + 48));
        _mm_store_si128((void *)(d + i), a);
        _mm_store_si128((void *)(d + i + 16), b);
        _mm_store_si128((void *)(d + i + 32), c);
        _mm_store_si128((void *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
}

static double best(void (*f)(char *, const char *, size_t), char *d, const char *s, size_t n) {
    double b = 1e18;
    for (int r = 0; r < 20; r++) {
        double t = now();
        f(d, s, n);
        __asm__ volatile("" ::"r"(d) : "memory");
        t = now() - t;
        if (t < b) b = t;
    }
    return b;
}

static void libc_copy(char *d, const char *s, size_t n) { memcpy(d, s, n); }

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? (size_t)atol(argv[1]) : 65536;
    char *src = aligned_alloc(4096, n + 8192), *dst = aligned_alloc(4096, n + 8192);
    memset(src, 1, n + 8192);
    memset(dst, 2, n + 8192);
    double t[512], v[512], sorted[512];
    for (int k = 0; k < 512; k++) {
        t[k] = best(libc_copy, dst + 8 * k, src, n);
        v[k] = best(vcopy, dst + 8 * k, src, n);
        sorted[k] = t[k];
    }
    qsort(sorted, 512, sizeof sorted[0], cmp);
    double med = sorted[256];
    printf("%zu bytes: memcpy median over distances %.0f ns\n", n, med);
    for (int k = 0; k < 512; k++)
        if (t[k] > 3 * med) printf("distance %4d: memcpy %.0f ns, vector loop %.0f ns\n", 8 * k, t[k], v[k]);
    return 0;
}
