/* Open MPI: the same windows of MPI_Barrier.
 *
 *   mpicc.openmpi -O2 obts.c -o obts && mpirun.openmpi -n 2 --bind-to none --mca btl_vader_single_copy_mechanism none ./obts 25 40000
 *
 * Prints rank 0's median (us) of each window of N iterations, W windows. */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec/1e3;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int rank; MPI_Comm_rank(MPI_COMM_WORLD,&rank);
  cpu_set_t c;CPU_ZERO(&c);CPU_SET(rank%2,&c);sched_setaffinity(0,sizeof c,&c);
  int W=atoi(argv[1]), N=atoi(argv[2]);
  double *t=malloc(sizeof(double)*N);
  for(int w=0;w<W;w++){
    for(int i=0;i<N;i++){double a=now();MPI_Barrier(MPI_COMM_WORLD);t[i]=now()-a;}
    qsort(t,N,sizeof(double),cmp);
    if(rank==0)printf("%.3f ",t[N/2]);fflush(stdout);
  }
  if(rank==0)printf("\n");
  MPI_Finalize();
}
