/* goal between two ranks: oneway (0 sends BYTES, 1 answers 1 byte after receiving) or exch
 * (both send and receive BYTES at once, then a 1-byte exchange), as one persistent schedule.
 *   gbulk MODE BYTES ITERS     (GOAL_Init's bootstrap from the environment) */
#define _GNU_SOURCE
#include <goal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
#define C(x) do{ if(!(x)){fprintf(stderr,"%s failed: %s\n",#x,GOAL_LastError());exit(1);} }while(0)
int main(int argc,char**argv){
  const char*mode=argv[1]; size_t n=strtoull(argv[2],0,0); int iters=atoi(argv[3]);
  C(GOAL_Init()==GOAL_SUCCESS); int me=GOAL_MyRank(), peer=1-me;
  char*s=malloc(n),*r=malloc(n); for(size_t i=0;i<n;i++) s[i]=(char)(i*7+me); memset(r,0,n); char a=1,b=0;
  GOAL_Graph g=GOAL_CreateGraph();
  if(!strcmp(mode,"oneway")){
    if(me==0){ C(GOAL_Send_c(g,s,n,1,1,GOAL_USERSPACE)>=0); C(GOAL_Recv_c(g,&b,1,1,2,GOAL_USERSPACE)>=0);} 
    else { GOAL_Vertex v=GOAL_Recv_c(g,r,n,0,1,GOAL_USERSPACE); GOAL_Vertex w=GOAL_Send_c(g,&a,1,0,2,GOAL_USERSPACE); C(GOAL_Requires(g,v,w)==GOAL_SUCCESS);} }
  else { GOAL_Vertex x=GOAL_Send_c(g,s,n,peer,1,GOAL_USERSPACE), y=GOAL_Recv_c(g,r,n,peer,1,GOAL_USERSPACE);
    GOAL_Vertex w=GOAL_Send_c(g,&a,1,peer,2,GOAL_USERSPACE), z=GOAL_Recv_c(g,&b,1,peer,2,GOAL_USERSPACE);
    C(GOAL_Requires(g,x,w)==0); C(GOAL_Requires(g,y,w)==0); (void)z; }
  GOAL_Schedule sc=GOAL_Compile(g); C(sc); GOAL_MakeScheduleReusable(sc);
  double*t=malloc(sizeof(double)*iters);
  for(int i=-2;i<iters;i++){ double t0=now(); GOAL_Handle h=GOAL_Run(sc); C(h); C(GOAL_Wait(h)==GOAL_SUCCESS); if(i>=0)t[i]=(now()-t0)*1e6; }
  if(me==1||!strcmp(mode,"exch")) for(size_t i=0;i<n;i++) if(r[i]!=(char)(i*7+peer)){fprintf(stderr,"rank %d: byte %zu wrong\n",me,i);exit(1);} 
  if(me==0){qsort(t,iters,sizeof(double),cmpd);printf("goal %s %zu: median %.0f us min %.0f us (%.2f Gbit/s at median)\n",mode,n,t[iters/2],t[0],n*8/t[iters/2]/1e3);} 
  GOAL_Finalize(); return 0;}
