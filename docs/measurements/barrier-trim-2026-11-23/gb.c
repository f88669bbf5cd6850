#include <goal.h>
#include <stdlib.h>
int main(int c,char**v){ if(GOAL_Init()) return 1; int n=atoi(v[1]); GOAL_Schedule s=GOAL_Barrier_init(GOAL_ALG_AUTO);
 for(int i=0;i<n;i++){GOAL_Handle h=GOAL_Run(s);GOAL_Wait(h);} GOAL_Finalize(); return 0;}
