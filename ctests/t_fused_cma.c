/*
 * t_fused_cma: t_fused with every large message offered by Cross Memory
 * Attach instead of the stream. The vector (50003 int64, 400 KB) is below
 * the size from which a fused receive asks for the stream, so the receiver
 * reads the sender's vector in 128 KiB pieces and combines each as it
 * comes; the same assertions as t_fused.
 */
// ranks: 2 3
// modes: 2
#define FUSED_VIA_CMA 1
#define N 50003
#define TEST_NAME "t_fused_cma"
#include "t_fused.c"
