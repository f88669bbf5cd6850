/*
 * t_receiver_killed_mid_write: t_killed_mid_write.c with the roles turned:
 * the busy receiver dies while its sender writes the message into its
 * memory, and the sender's GOAL_Wait must report it (its write cut in the
 * middle: "rank 0 exited before its N bytes were written (at byte K)").
 */
// ranks: 2
// expect-fail: (rank[ =:#]*0([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*0([^0-9]|$))
// expect-survivors: survivor-saw-error
// (Not in manual mode, where nothing is pushed, rank 0's Run reads the
// whole message itself, and the sender rightly ends without an error.)
#define KILL_RECEIVER 1
#include "t_killed_mid_write.c"
