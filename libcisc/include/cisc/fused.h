/*
 * cisc/fused.h - fused (CISC) operations: the step-vector builder and the
 * convenience calls of FusionFS Table 2.
 *
 * Placeholder created on the qp branch so that <cisc/cisc.h> can include
 * it; the cisc branch owns this file and replaces it.
 */
#ifndef CISC_FUSED_H
#define CISC_FUSED_H

#endif
