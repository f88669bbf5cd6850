/*
 * t_killed_mid_heap_split: t_killed_mid_split.c with both buffers from the
 * shared heap (GOAL_Alloc): the receiver copies its half of the message
 * out of the sender's heap while the sender writes the other half, and the
 * sender dies meanwhile. The receiver's mapping of the dead sender's heap
 * stays readable, so only the liveness check can end its wait for the
 * sender's half: its Wait must report the lost peer all the same.
 */
// ranks: 2
// expect-fail: (rank[ =:#]*1([^0-9]|$).*(sigkill|signal 9))|((sigkill|signal 9).*rank[ =:#]*1([^0-9]|$))
// expect-survivors: survivor-saw-error
// modes: 2
#define HEAP_BUFFERS 1
#include "t_killed_mid_split.c"
