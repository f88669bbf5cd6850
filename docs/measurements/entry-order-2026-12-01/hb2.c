#define _GNU_SOURCE
#include <goal.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
static char z;
/* ranks on CPU c: c, c+ncpu, ...; leader = c */
static GOAL_Schedule hier(int me,int n,int ncpu){
  GOAL_Graph g=GOAL_CreateGraph();
  int lead=me%ncpu;
  if(me!=lead){ GOAL_Send(g,&z,0,lead,1,GOAL_USERSPACE); GOAL_Recv(g,&z,0,lead,2,GOAL_USERSPACE); }
  else {
    GOAL_Vertex ar[16]; int na=0;
    for(int f=me+ncpu;f<n;f+=ncpu) ar[na++]=GOAL_Recv(g,&z,0,f,1,GOAL_USERSPACE);
    int nl=ncpu<n?ncpu:n;
    /* dissemination among leaders */
    GOAL_Vertex gate[16]; int ng=na; memcpy(gate,ar,sizeof(GOAL_Vertex)*na);
    for(int d=1,k=0;d<nl;d<<=1,k++){
      GOAL_Vertex s=GOAL_Send(g,&z,0,(me+d)%nl,10+k,GOAL_USERSPACE);
      GOAL_Vertex r=GOAL_Recv(g,&z,0,(me+nl-d)%nl,10+k,GOAL_USERSPACE);
      for(int i=0;i<ng;i++){GOAL_Requires(g,gate[i],s);GOAL_Requires(g,gate[i],r);}
      gate[0]=r; ng=1;
    }
    for(int f=me+ncpu;f<n;f+=ncpu){ GOAL_Vertex s=GOAL_Send(g,&z,0,f,2,GOAL_USERSPACE); for(int i=0;i<ng;i++) GOAL_Requires(g,gate[i],s);}
  }
  GOAL_Schedule s=GOAL_Compile(g); if(!s){fprintf(stderr,"%s\n",GOAL_LastError());exit(1);} return s;
}

static GOAL_Schedule diss(int me,int n,const int*perm){
  GOAL_Graph g=GOAL_CreateGraph(); int inv[64]; for(int i=0;i<n;i++) inv[perm[i]]=i;
  int v=inv[me]; GOAL_Vertex gate=-1; int have=0;
  for(int d=1,k=0;d<n;d<<=1,k++){
    GOAL_Vertex s=GOAL_Send(g,&z,0,perm[(v+d)%n],20+k,GOAL_USERSPACE);
    GOAL_Vertex r=GOAL_Recv(g,&z,0,perm[(v+n-d)%n],20+k,GOAL_USERSPACE);
    if(have){GOAL_Requires(g,gate,s);GOAL_Requires(g,gate,r);}
    gate=r; have=1;
  }
  GOAL_Schedule s=GOAL_Compile(g); if(!s){fprintf(stderr,"%s\n",GOAL_LastError());exit(1);} return s;
}

static GOAL_Schedule diss_rev(int me,int n){
  GOAL_Graph g=GOAL_CreateGraph(); int ds[8],nd=0; for(int d=1;d<n;d<<=1) ds[nd++]=d;
  GOAL_Vertex gate=-1; int have=0;
  for(int k=nd-1;k>=0;k--){ int d=ds[k];
    GOAL_Vertex s=GOAL_Send(g,&z,0,(me+d)%n,30+k,GOAL_USERSPACE);
    GOAL_Vertex r=GOAL_Recv(g,&z,0,(me+n-d)%n,30+k,GOAL_USERSPACE);
    if(have){GOAL_Requires(g,gate,s);GOAL_Requires(g,gate,r);}
    gate=r; have=1;
  }
  GOAL_Schedule s=GOAL_Compile(g); if(!s){fprintf(stderr,"%s\n",GOAL_LastError());exit(1);} return s;
}
int main(int argc,char**argv){
  GOAL_Init(); int me=GOAL_MyRank(); int ncpu=2;
  cpu_set_t cs; CPU_ZERO(&cs); CPU_SET(me%ncpu,&cs); sched_setaffinity(0,sizeof cs,&cs);
  int alg = argc>1 ? atoi(argv[1]) : GOAL_ALG_AUTO;
  int N = argc>2 ? atoi(argv[2]) : 3000;
  const char *out = argc>3 ? argv[3] : "/tmp/hb2";
  static const int P1[4]={0,2,1,3}, P0[4]={0,1,2,3}, P2[4]={0,1,3,2};
  GOAL_Schedule s= alg==-5 ? diss_rev(me,GOAL_GroupSize()) : alg==-2 ? diss(me,4,P1) : alg==-3 ? diss(me,4,P0) : alg==-4 ? diss(me,4,P2) : alg<0 ? hier(me,GOAL_GroupSize(),ncpu) : GOAL_Barrier_init(alg);
  double *t0=malloc(N*sizeof(double)), *t1=malloc(N*sizeof(double));
  for(int i=0;i<300;i++) GOAL_Wait(GOAL_Run(s));
  for(int i=0;i<N;i++){ t0[i]=now(); GOAL_Wait(GOAL_Run(s)); t1[i]=now(); }
  char fn[256]; snprintf(fn,sizeof fn,"%s.%d",out,me); FILE*f=fopen(fn,"w");
  for(int i=0;i<N;i++) fprintf(f,"%.3f %.3f\n",t0[i],t1[i]); fclose(f);
  GOAL_Finalize(); return 0;
}
