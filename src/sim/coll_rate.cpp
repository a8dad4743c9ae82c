/* coll_rate.cpp: sim_put_async_at_most (coll_rate.h), through SimGrid's C++ API. */
#include "sim/coll_rate.h"

#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Mailbox.hpp>

sg_comm_t sim_put_async_at_most(sg_mailbox_t box, void *payload, long bytes, double rate) {
  simgrid::s4u::CommPtr comm = box->put_init(payload, static_cast<uint64_t>(bytes));
  comm->set_rate(rate);
  comm->start();
  comm->add_ref(); /* the caller's reference, as sg_mailbox_put_async gives it */
  return comm.get();
}
