#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
int main(int argc,char**argv){
  MPI_Init(&argc,&argv); int me; MPI_Comm_rank(MPI_COMM_WORLD,&me);
  cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me%2,&cs); sched_setaffinity(0,sizeof cs,&cs);
  int N=argc>1?atoi(argv[1]):3000; const char*out=argc>2?argv[2]:"/tmp/mb2";
  double *t0=malloc(N*sizeof(double)),*t1=malloc(N*sizeof(double));
  for(int i=0;i<300;i++) MPI_Barrier(MPI_COMM_WORLD);
  for(int i=0;i<N;i++){t0[i]=now(); MPI_Barrier(MPI_COMM_WORLD); t1[i]=now();}
  char fn[256]; snprintf(fn,sizeof fn,"%s.%d",out,me); FILE*f=fopen(fn,"w");
  for(int i=0;i<N;i++) fprintf(f,"%.3f %.3f\n",t0[i],t1[i]); fclose(f);
  MPI_Finalize(); return 0;
}
