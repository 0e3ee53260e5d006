/* What the rest of the library needs from a controller. */
#ifndef NVMEOF_CTRL_H
#define NVMEOF_CTRL_H

#include "nvmeof.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>

struct mem_ctx;
struct ns_table;
struct aer;
/* The controller's registration context (its PD and region count). */
struct mem_ctx *ctrl_mem(struct nvmeof_ctrl *c);
/* For admin commands after bring-up (adminio.c, aer.c): the admin queue is
 * used only with its lock held. */
struct nvmeof_queue *ctrl_admin(struct nvmeof_ctrl *c);
pthread_mutex_t *ctrl_admin_lock(struct nvmeof_ctrl *c);
/* Takes admin_lock, then runs a due fence (ctrl_fence) before the caller
 * sends anything: whoever takes the admin queue after an I/O queue's loss
 * must not send on the old association (a target resets its KATO timer on
 * any command). Every taker of admin_lock that sends uses it. */
void ctrl_admin_take(struct nvmeof_ctrl *c);
uint32_t ctrl_cmd_timeout(const struct nvmeof_ctrl *c);
uint32_t ctrl_kato_ms(const struct nvmeof_ctrl *c);
/* Counts re-associations: what was read from Identify Controller before a
 * change may no longer hold (CNTLID, ANATT, the ANA log's size). */
uint32_t ctrl_assoc_gen(const struct nvmeof_ctrl *c);
struct ns_table *ctrl_nst(struct nvmeof_ctrl *c);
struct aer **ctrl_aer(struct nvmeof_ctrl *c);
/* The address the controller was connected to (a path's name). */
const struct sockaddr_storage *ctrl_dst(const struct nvmeof_ctrl *c);
/* The controller's state machine (cstate.c) for the threads that use its
 * admin queue: what each may do in the state it is in now (keep-alive and
 * events only while associated). */
enum ctrl_act { CTRL_DO_KEEP_ALIVE, CTRL_DO_EVENTS, CTRL_DO_ADMIN };
bool ctrl_may(struct nvmeof_ctrl *c, enum ctrl_act act);
/* For an admin command (what): 0 once associated, waiting up to timeout_ms
 * while the association is re-created; an error naming the state otherwise. */
int ctrl_wait_live(struct nvmeof_ctrl *c, uint32_t timeout_ms, const char *what);

#endif
