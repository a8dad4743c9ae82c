/* coll_rate.h: a send held to a rate (coll_rate.cpp), which SimGrid's C API cannot ask for.
 * How a flow between hosts is held to one NIC's bandwidth when a host has several (coll.h). */
#ifndef TERN_SIM_COLL_RATE_H
#define TERN_SIM_COLL_RATE_H

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

/* As sg_mailbox_put_async, the flow going at most rate bytes a second. */
sg_comm_t sim_put_async_at_most(sg_mailbox_t box, void *payload, long bytes, double rate);

#ifdef __cplusplus
}
#endif

#endif /* TERN_SIM_COLL_RATE_H */
