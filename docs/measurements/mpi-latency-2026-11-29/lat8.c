#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+1e-3*t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){int prov;MPI_Init_thread(&argc,&argv,MPI_THREAD_MULTIPLE,&prov);int r,n;MPI_Comm_rank(MPI_COMM_WORLD,&r);MPI_Comm_size(MPI_COMM_WORLD,&n);
 cpu_set_t s;CPU_ZERO(&s);CPU_SET(r%2,&s);sched_setaffinity(0,sizeof s,&s);
 int N=argc>2?atoi(argv[2]):5000; const char*op=argv[1]; double *t=malloc(sizeof(double)*N); char buf[8]={0}; float a[2]={1,2},b[2];
 for(int it=-500;it<N;it++){MPI_Barrier(MPI_COMM_WORLD);double t0=now();MPI_Request q;
  if(!strcmp(op,"bcast"))MPI_Ibcast(buf,8,MPI_BYTE,0,MPI_COMM_WORLD,&q);
  else if(!strcmp(op,"allreduce"))MPI_Iallreduce(a,b,2,MPI_FLOAT,MPI_SUM,MPI_COMM_WORLD,&q);
  else MPI_Ibarrier(MPI_COMM_WORLD,&q);
  MPI_Wait(&q,MPI_STATUS_IGNORE);double t1=now();if(it>=0)t[it]=t1-t0;}
 qsort(t,N,sizeof(double),cmp);
 printf("%s rank %d: p10 %.1f p50 %.1f p90 %.1f p99 %.1f\n",op,r,t[N/10],t[N/2],t[N*9/10],t[N*99/100]);
 MPI_Finalize();}
