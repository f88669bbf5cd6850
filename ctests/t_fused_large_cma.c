/*
 * t_fused_large_cma: t_fused with every large message offered by Cross
 * Memory Attach, and a vector (200003 int64, 1.6 MB) large enough that the
 * fused receive answers the offer with a CTS that asks for the stream for
 * this message only: the combining then overlaps the sender's copy. The
 * same assertions as t_fused, over runs that each offer CMA again.
 */
// ranks: 2 3
// modes: 2
#define FUSED_VIA_CMA 1
#define TEST_NAME "t_fused_large_cma"
#include "t_fused.c"
