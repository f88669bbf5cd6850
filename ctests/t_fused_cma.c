/*
 * t_fused_cma: t_fused with every large message read by Cross Memory
 * Attach instead of the stream, so that a fused receive reads the sender's
 * vector in pieces and combines each as it comes (the same assertions).
 */
// ranks: 2 3
// modes: 2
#define FUSED_VIA_CMA 1
#include "t_fused.c"
