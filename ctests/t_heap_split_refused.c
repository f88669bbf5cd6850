/*
 * t_heap_split_refused: t_split_refused.c with the message buffers from the
 * shared heap (GOAL_Alloc): the receiver copies its half out of the
 * sender's heap, the sender may not write the other half (ptrace rules),
 * and the receiver copies the rest out of the heap too.
 */
// ranks: 2
#define SPLIT 1
#define HEAP_BUFFERS 1
#include "t_push_refused.c"
