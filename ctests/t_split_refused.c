/*
 * t_split_refused: t_push_refused.c with an idle receiver: the sender may
 * not write its half of a split message (ptrace rules), and the receiver
 * reads the whole message itself.
 */
// ranks: 2
#define SPLIT 1
#include "t_push_refused.c"
