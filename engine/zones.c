/* fio's zone hooks (zonemode=zbd) for a zoned namespace (NVMe ZNS), Zone
 * Append, and the placement identifiers of Flexible Data Placement.
 *
 * fio asks for the zoned model, the zone report and the limits in its
 * parent, before any job has connected: those answers come from what the
 * probe learnt at setup (probe.c), which the parent may not connect for.
 * Resets, finishes and later reports come from the job's own queue pair,
 * once init has opened it; a reset fio's setup asks for before that, from
 * a short-lived queue pair (probe_queue_call). */
#include <errno.h>
#include <string.h>

#include "engine.h"
#include "zdesc.h"
#include "zretry.h"

/* Report Zones in pieces of this many (a piece's data fits one command). */
#define REPORT_CHUNK 128

static uint64_t zone_bytes(const struct efile *ef) { return ef->facts.zi.zone_size << ef->lbads; }

/* The job's queue pair for the file's zone commands, or NULL before init. */
static struct nvmeof_queue *zq(const struct efile *ef)
{
	return ef->jq && ef->jq->nq ? ef->jq->q[0] : NULL;
}

/* A hook's synchronous call waits, within the command timeout, for a slot
 * of a queue pair the job's I/O keeps full (zretry.c). */
static uint32_t sync_ms(const struct efile *ef)
{
	return ef->cfg.o.cmd_timeout_ms ? ef->cfg.o.cmd_timeout_ms : 30000;
}

struct zcall {
	const struct efile *ef;
	uint64_t slba;
	uint8_t zsa;
	uint32_t want, *got;
	struct nvmeof_zone *buf;
};
static int report_call(struct nvmeof_queue *q, void *arg)
{
	struct zcall *c = arg;
	return nvmeof_zone_report(q, c->ef->ns, c->slba, 0, true, c->buf, c->want, c->got, 0);
}
static int send_call(struct nvmeof_queue *q, void *arg)
{
	struct zcall *c = arg;
	return nvmeof_zone_mgmt_send_sync(q, c->ef->ns, c->slba, c->zsa, false, 0);
}

/* z, due at LBA want, as fio's zone: 0, or -EIO with errno set after saying why */
static int to_fio(const struct efile *ef, const struct nvmeof_zone *z, uint64_t want, struct zbd_zone *out)
{
	char why[240];
	if (!zdesc_to_fio(z, want, ef->facts.zi.zone_size, ef->lbads, ef->nsze, out, why, sizeof(why)))
		return 0;
	eng_err("nvmeof: report zones: %s\n", why);
	errno = EIO;
	return -EIO;
}

int zones_get_model(struct thread_data *td, struct fio_file *f, enum zbd_zoned_model *model)
{
	(void)td;
	struct efile *ef = FILE_ENG_DATA(f);
	if (!ef) {
		errno = EINVAL;
		return -EINVAL;
	}
	*model = ef->facts.zi.zoned ? ZBD_HOST_MANAGED : ZBD_NONE;
	return 0;
}

int zones_report(struct thread_data *td, struct fio_file *f, uint64_t offset, struct zbd_zone *zones,
		 unsigned int nr)
{
	(void)td;
	struct efile *ef = FILE_ENG_DATA(f);
	if (!ef || !ef->facts.zi.zoned || !ef->facts.zi.zone_size) {
		errno = EINVAL;
		return -EINVAL;
	}
	uint64_t slba = offset >> ef->lbads;
	uint64_t first = slba / ef->facts.zi.zone_size;
	struct nvmeof_queue *q = zq(ef);
	if (!q) {
		/* before init: the report probe.c took */
		unsigned int n = 0;
		for (uint64_t i = first; i < ef->facts.nzones && n < nr; i++)
			if (to_fio(ef, &ef->zones[i], i * ef->facts.zi.zone_size, &zones[n++]))
				return -EIO;
		return (int)n;
	}
	struct nvmeof_zone buf[REPORT_CHUNK];
	unsigned int n = 0;
	slba = first * ef->facts.zi.zone_size;
	while (n < nr && slba < ef->nsze) {
		uint32_t want = nr - n < REPORT_CHUNK ? nr - n : REPORT_CHUNK, got = 0;
		struct zcall c = {.ef = ef, .slba = slba, .want = want, .got = &got, .buf = buf};
		int rc = zretry(q, report_call, &c, sync_ms(ef));
		if (rc) {
			eng_err("nvmeof: report zones at LBA %llu: %s\n", (unsigned long long)slba, nvmeof_errmsg());
			errno = eng_errno(rc);
			return -errno;
		}
		if (!got)
			break;
		for (uint32_t i = 0; i < got; i++, slba += ef->facts.zi.zone_size)
			if (to_fio(ef, &buf[i], slba, &zones[n++]))
				return -EIO;
	}
	return (int)n;
}

/* One Zone Management Send action on every zone of [offset, offset + length). */
struct zrange {
	uint64_t offset, length;
	uint8_t zsa;
	const char *what;
};
static int send_range(const struct efile *ef, struct nvmeof_queue *q, void *arg)
{
	const struct zrange *r = arg;
	uint64_t zsz = ef->facts.zi.zone_size;
	uint64_t end = (r->offset + r->length) >> ef->lbads;
	for (uint64_t slba = (r->offset >> ef->lbads) / zsz * zsz; slba < end && slba < ef->nsze; slba += zsz) {
		struct zcall c = {.ef = ef, .slba = slba, .zsa = r->zsa};
		int rc = zretry(q, send_call, &c, sync_ms(ef));
		if (rc) {
			eng_err("nvmeof: %s of the zone at LBA %llu: %s\n", r->what, (unsigned long long)slba,
				nvmeof_errmsg());
			return eng_errno(rc);
		}
	}
	return 0;
}

/* Before init (fio's setup resets the zones open beyond max_open_zones, in
 * its parent) the job has no queue pair: a short-lived one of its own. */
static int zone_action(struct thread_data *td, struct fio_file *f, uint64_t offset, uint64_t length, uint8_t zsa,
		       const char *what)
{
	struct efile *ef = FILE_ENG_DATA(f);
	if (!ef || !ef->facts.zi.zoned || !ef->facts.zi.zone_size) {
		eng_err("nvmeof: %s of zones at %llu: the namespace is not zoned\n", what, (unsigned long long)offset);
		errno = EINVAL;
		return -EINVAL;
	}
	struct zrange r = {.offset = offset, .length = length, .zsa = zsa, .what = what};
	struct nvmeof_queue *q = zq(ef);
	int rc = q ? send_range(ef, q, &r) : probe_queue_call(td, ef, send_range, &r);
	if (rc) {
		errno = rc;
		return -rc;
	}
	return 0;
}

int zones_reset_wp(struct thread_data *td, struct fio_file *f, uint64_t offset, uint64_t length)
{
	return zone_action(td, f, offset, length, NVMEOF_ZSA_RESET, "reset");
}

int zones_max_open(struct thread_data *td, struct fio_file *f, unsigned int *max)
{
	(void)td;
	struct efile *ef = FILE_ENG_DATA(f);
	*max = ef ? zdesc_limit(ef->facts.zi.max_open, ef->facts.zi.nr_zones) : 0;
	return 0;
}

#if FIO_IOOPS_VERSION >= 33
int zones_max_active(struct thread_data *td, struct fio_file *f, unsigned int *max)
{
	(void)td;
	struct efile *ef = FILE_ENG_DATA(f);
	*max = ef ? zdesc_limit(ef->facts.zi.max_active, ef->facts.zi.nr_zones) : 0;
	return 0;
}
#endif

#if FIO_IOOPS_VERSION >= 32
int zones_finish(struct thread_data *td, struct fio_file *f, uint64_t offset, uint64_t length)
{
	return zone_action(td, f, offset, length, NVMEOF_ZSA_FINISH, "finish");
}

/* fio asks twice: for the count (nr_ruhs 0), then for that many. */
int zones_fdp_ruhs(struct thread_data *td, struct fio_file *f, struct fio_ruhs_info *ruhs)
{
	(void)td;
	struct efile *ef = FILE_ENG_DATA(f);
	if (!ef || ef->facts.fdp_rc) {
		eng_err("nvmeof: fdp=1 needs the namespace's placement identifiers: %s\n",
			ef ? ef->facts.fdp_why : "no file");
		errno = ENOTSUP;
		return -ENOTSUP;
	}
	uint32_t want = ruhs->nr_ruhs;
	ruhs->nr_ruhs = ef->facts.npids;
	for (uint32_t i = 0; i < want && i < ef->facts.npids; i++)
		ruhs->plis[i] = ef->facts.pids[i];
	return 0;
}
#endif

#if FIO_IOOPS_VERSION >= 37
/* fio 3.42 recovers from a failed write by writing buf (its own I/O
 * memory) at the zone's write pointer; buf NULL asks for zeroes (its
 * blkzoned backend's FALLOC_FL_ZERO_RANGE): Write Zeroes, a write that
 * keeps the zone's rules. */
struct wpcall {
	const struct efile *ef;
	uint64_t slba;
	uint32_t nlb;
	size_t off;
	bool zeroes;
};
static int move_call(struct nvmeof_queue *q, void *arg)
{
	struct wpcall *c = arg;
	if (c->zeroes)
		return nvmeof_write_zeroes_sync(q, c->ef->ns, c->slba, c->nlb, 0, 0);
	return nvmeof_write_sync(q, c->ef->ns, c->slba, c->nlb, c->ef->jq->mr, c->off, 0);
}

int zones_move_wp(struct thread_data *td, struct fio_file *f, struct zbd_zone *z, uint64_t length,
		  const char *buf)
{
	struct efile *ef = FILE_ENG_DATA(f);
	struct nvmeof_queue *q = ef ? zq(ef) : NULL;
	uint64_t lba = 1ull << (ef ? ef->lbads : 0);
	bool in_mem = !buf || (buf >= td->orig_buffer && length <= td->orig_buffer_size &&
			       (size_t)(buf - td->orig_buffer) <= td->orig_buffer_size - length);
	if (!q || !in_mem || (length | z->wp) % lba || !length || (length >> ef->lbads) > UINT32_MAX) {
		eng_err("nvmeof: moving a write pointer by %llu bytes: %s\n", (unsigned long long)length,
			!q ? "the job has no queue pair" : "not whole blocks of the job's I/O memory");
		errno = EINVAL;
		return -EINVAL;
	}
	struct wpcall c = {.ef = ef, .slba = z->wp >> ef->lbads, .nlb = (uint32_t)(length >> ef->lbads),
			   .off = buf ? (size_t)(buf - td->orig_buffer) : 0, .zeroes = !buf};
	int rc = zretry(q, move_call, &c, sync_ms(ef));
	if (rc) {
		eng_err("nvmeof: moving the write pointer at %llu%s: %s\n", (unsigned long long)z->wp,
			buf ? "" : " (Write Zeroes)", nvmeof_errmsg());
		errno = eng_errno(rc);
		return -errno;
	}
	return 0;
}
#endif

bool zones_in_order(struct thread_data *td, const struct efile *ef)
{
	return ef->facts.zi.zoned && td->o.zone_mode == ZONE_MODE_ZBD && td_write(td) &&
	       !((struct eng_opts *)td->eo)->zone_append;
}

int zones_check(struct thread_data *td, struct fio_file *f, struct efile *ef)
{
	struct eng_opts *eo = td->eo;
	const struct nvmeof_zns_info *zi = &ef->facts.zi;
	bool zbd = td->o.zone_mode == ZONE_MODE_ZBD;
	bool fdp = ENG_DP_ANY(td);
	if (eo->zone_append && !zi->zoned) {
		eng_err("nvmeof: zone_append=1: namespace %u of %s is not zoned (no Zone Append)\n", ef->nsid,
			f->file_name);
		return eng_fail(td, EINVAL, "nvmeof zone_append");
	}
	/* A failover re-sends a lost write on another path, where it can land
	 * behind a later one: a zone's sequential writes would break. */
	if (ef->cfg.t.nalt && ((zi->zoned && (zbd || eo->zone_append)) || fdp)) {
		eng_err("nvmeof: %s over several paths is not supported: a failover may reorder writes; "
			"name one path\n", fdp ? "data placement" : "a zoned namespace");
		return eng_fail(td, EINVAL, "nvmeof zones over several paths");
	}
	/* The kernel refuses a zoned namespace with Zone Operation
	 * Characteristics: variable capacity (bit 0) and zones the controller
	 * finishes itself (Zone Active Excursions, bit 1) go past fio's model */
	if (zi->zoned && zbd && zi->zoc && !ef->zone_said)
		eng_info("nvmeof: %s: zoned namespace %u: Zone Operation Characteristics %xh (%s%s): fio's zone "
			 "state may go wrong when the controller changes a zone itself\n", f->file_name, ef->nsid,
			 zi->zoc, zi->zoc & 1 ? "variable zone capacity" : "",
			 zi->zoc & 2 ? (zi->zoc & 1 ? ", zone active excursions" : "zone active excursions") : "");
	/* A Zone Append is never split (ZASL, else MDTS bounds it); a directive
	 * write goes as one command (MDTS): refused here, not write by write */
	unsigned long long wbs = td->o.max_bs[DDIR_WRITE], mdts = ef->facts.max_xfer;
	unsigned long long zasl = zi->zasl_bytes && (!mdts || zi->zasl_bytes < mdts) ? zi->zasl_bytes : mdts;
	if (td_write(td) && eo->zone_append && zi->zoned && zasl && wbs > zasl) {
		eng_err("nvmeof: zone_append=1: bs=%llu is above the %llu KiB a Zone Append may carry (%s); a Zone "
			"Append is never split: use bs=%lluk or less\n", wbs, zasl >> 10,
			zasl == mdts ? "MDTS" : "ZASL", zasl >> 10);
		return eng_fail(td, EINVAL, "nvmeof zone_append bs");
	}
	if (td_write(td) && fdp && mdts && wbs > mdts) {
		eng_err("nvmeof: data placement: bs=%llu is above the controller's %llu KiB (MDTS); a directive "
			"write goes as one command: use bs=%lluk or less\n", wbs, mdts >> 10, mdts >> 10);
		return eng_fail(td, EINVAL, "nvmeof data placement bs");
	}
	/* fio means a trim in zonemode=zbd as a zone reset (it calls reset_wp
	 * for it when the engine trims synchronously, as its io_uring_cmd
	 * engine does); a Deallocate would leave the write pointer where it is */
	if (zi->zoned && zbd && td_trim(td) && !td_ioengine_flagged(td, FIO_ASYNCIO_SYNC_TRIM)) {
		td->io_ops->flags |= FIO_ASYNCIO_SYNC_TRIM;
		td_set_ioengine_flags(td); /* fio copied the flags into td at load */
	}
	ef->write_special = (eo->zone_append && zi->zoned) || fdp;
	if (zi->zoned && !ef->zone_said) {
		ef->zone_said = true;
		char lim[96] = "";
		if (zi->zasl_bytes)
			snprintf(lim, sizeof(lim), ", zone append at most %u KiB", zi->zasl_bytes >> 10);
		eng_info("nvmeof: %s: zoned namespace %u: %llu zones of %llu LBAs (%llu MiB), max open %u, "
			 "max active %u%s%s\n", f->file_name, ef->nsid, (unsigned long long)zi->nr_zones,
			 (unsigned long long)zi->zone_size, (unsigned long long)(zone_bytes(ef) >> 20), zi->max_open,
			 zi->max_active, lim, eo->zone_append ? "; writes as Zone Append" : "");
	}
	return 0;
}

int zones_landed(const struct ioctx *x, const struct nvmeof_cpl *cpl, char *why, size_t len)
{
	uint64_t got = cpl->cdw0 | (uint64_t)cpl->cdw1 << 32;
	if (got == x->slba)
		return 0;
	snprintf(why, len, "zone append landed at LBA %llu, not at LBA %llu where fio expected it (another "
		 "write to the zone went first)", (unsigned long long)got, (unsigned long long)x->slba);
	return 1;
}

int zones_submit(struct thread_data *td, struct nvmeof_queue *q, struct efile *ef, struct io_u *io_u,
		 struct ioctx *x, uint64_t slba, uint32_t nlb, struct nvmeof_mr *mr, size_t off, nvmeof_cb done,
		 nvmeof_cb appended)
{
	if (((struct eng_opts *)td->eo)->zone_append && ef->facts.zi.zoned) {
		uint64_t zsz = ef->facts.zi.zone_size;
		x->slba = slba;
		return nvmeof_zone_append(q, ef->ns, slba / zsz * zsz, nlb, mr, off, 0, appended, x);
	}
#if FIO_IOOPS_VERSION >= 32
	return nvmeof_write_dspec(q, ef->ns, slba, nlb, mr, off, 0, (uint8_t)io_u->dtype, (uint16_t)io_u->dspec,
				  done, x);
#else
	(void)io_u;
	return nvmeof_write(q, ef->ns, slba, nlb, mr, off, done, x);
#endif
}
