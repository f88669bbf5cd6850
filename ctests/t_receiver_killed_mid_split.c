/*
 * t_receiver_killed_mid_split: t_killed_mid_split.c with the receiver
 * dying instead, while it reads its half and the sender writes the other:
 * the sender's write fails (ESRCH), or the liveness check sees the death
 * first; either way its Wait reports the lost peer.
 */
// ranks: 2
// expect-fail: (rank[ =:#]*0([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*0([^0-9]|$))
// expect-survivors: survivor-saw-error
// (In the default mode only: in manual mode nothing is split.)
#define KILL_RECEIVER 1
#include "t_killed_mid_split.c"
