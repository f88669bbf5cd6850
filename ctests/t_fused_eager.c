/*
 * t_fused_eager: t_fused with both messages eager, through the pair's
 * ring: an odd 701-byte message, then 4001 int64 elements (32 KiB) that
 * a posted receive combines with its local operation straight from the
 * ring (the poll fuses them; the scratchpad is never written). The same
 * assertions as t_fused for SUB, in both operand orders, into a user
 * buffer and into the scratchpad (a division is never fused in the poll,
 * where its failure could end the execution before its sends leave). The
 * division by zero too: a rank whose peer's vector arrived before it ran
 * fails its execution before its own vector leaves, and that peer must end
 * with GOAL_ERR_PEER_FAILED naming the failure, where it used to wait for
 * ever.
 * Run in every progress mode.
 */
// ranks: 2 3
// modes: 2
// all-modes: 2
#define FUSED_EAGER 1
#define ODD 701
#define N 4001
#define TEST_NAME "t_fused_eager"
#include "t_fused.c"
