/* Plain TCP floor between two hosts: one connection, default socket options + NODELAY.
 *   host 0: tcp_floor server PORT MODE BYTES ITERS      host 1: tcp_floor client ADDR PORT MODE BYTES ITERS
 * MODE oneway: 0 sends BYTES, 1 reads them and sends 1 byte back; time at 0 from first write to the ack.
 * MODE exch:   both send BYTES and read BYTES at once (poll, nonblocking), then a 1-byte sync.
 * Prints median/min us per iteration (at rank 0). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void rd(int fd,char*b,size_t n){while(n){ssize_t k=read(fd,b,n);if(k<=0){perror("read");exit(1);}b+=k;n-=k;}}
static void wr(int fd,const char*b,size_t n){while(n){ssize_t k=write(fd,b,n);if(k<=0){perror("write");exit(1);}b+=k;n-=k;}}
static void exch(int fd,char*s,char*r,size_t n){
  size_t so=0,ro=0; int fl=fcntl(fd,F_GETFL); fcntl(fd,F_SETFL,fl|O_NONBLOCK);
  while(so<n||ro<n){struct pollfd p={fd,(short)((ro<n?POLLIN:0)|(so<n?POLLOUT:0)),0};poll(&p,1,-1);
    if(so<n&&(p.revents&POLLOUT)){ssize_t k=write(fd,s+so,n-so);if(k>0)so+=k;else if(errno!=EAGAIN){perror("w");exit(1);}}
    if(ro<n&&(p.revents&POLLIN)){ssize_t k=read(fd,r+ro,n-ro);if(k>0)ro+=k;else if(k==0||errno!=EAGAIN){perror("r");exit(1);}}}
  fcntl(fd,F_SETFL,fl);}
int main(int argc,char**argv){
  int server=!strcmp(argv[1],"server"); int a=2; const char*addr=server?NULL:argv[a++]; int port=atoi(argv[a++]);
  const char*mode=argv[a++]; size_t n=strtoull(argv[a++],0,0); int iters=atoi(argv[a++]);
  int fd; int one=1;
  if(server){int l=socket(AF_INET,SOCK_STREAM,0);setsockopt(l,SOL_SOCKET,SO_REUSEADDR,&one,4);
    struct sockaddr_in sa={.sin_family=AF_INET,.sin_port=htons(port)};bind(l,(void*)&sa,sizeof sa);listen(l,1);fd=accept(l,0,0);}
  else{fd=socket(AF_INET,SOCK_STREAM,0);struct sockaddr_in sa={.sin_family=AF_INET,.sin_port=htons(port)};inet_pton(AF_INET,addr,&sa.sin_addr);
    for(int t=0;connect(fd,(void*)&sa,sizeof sa);t++){if(t>100){perror("connect");return 1;}usleep(50000);close(fd);fd=socket(AF_INET,SOCK_STREAM,0);}}
  setsockopt(fd,IPPROTO_TCP,TCP_NODELAY,&one,4);
  char*s=malloc(n),*r=malloc(n);memset(s,1,n);memset(r,0,n);char c=0;
  double*t=malloc(sizeof(double)*iters);
  for(int i=0;i<iters;i++){
    double t0=now();
    if(!strcmp(mode,"oneway")){ if(server){wr(fd,s,n);rd(fd,&c,1);}else{rd(fd,r,n);wr(fd,&c,1);} }
    else { exch(fd,s,r,n); if(server){wr(fd,&c,1);rd(fd,&c,1);}else{rd(fd,&c,1);wr(fd,&c,1);} }
    t[i]=(now()-t0)*1e6;}
  if(server){qsort(t,iters,sizeof(double),cmpd);printf("tcp %s %zu: median %.0f us min %.0f us (%.2f Gbit/s at median)\n",mode,n,t[iters/2],t[0],n*8/t[iters/2]/1e3);}
  return 0;}
