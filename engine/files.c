/* A job's files: each one's namespace, the job's block sizes and offsets
 * checked against it, and the controller held for it. */
#include <errno.h>
#include <stdlib.h>

#include "engine.h"

static int check_sizes(struct thread_data *td, struct fio_file *f, struct efile *ef)
{
	uint32_t lba = 1u << ef->lbads;
	for (int d = DDIR_READ; d < DDIR_RWDIR_CNT; d++) {
		if (!(td->o.td_ddir & (1 << d)) && !(d == DDIR_TRIM && td_trim(td)))
			continue;
		if (td->o.min_bs[d] % lba || td->o.max_bs[d] % lba || td->o.bs[d] % lba ||
		    (td->o.ba[d] && td->o.ba[d] % lba)) {
			eng_err("nvmeof: block size %llu (min %llu, max %llu, align %llu) is not a "
				"multiple of namespace %u's %u-byte LBA\n",
				td->o.bs[d], td->o.min_bs[d], td->o.max_bs[d], td->o.ba[d], ef->nsid, lba);
			return eng_fail(td, EINVAL, "nvmeof block size");
		}
	}
	uint64_t size = ef->nsze << ef->lbads;
	if (td->o.start_offset >= size || td->o.start_offset % lba) {
		eng_err("nvmeof: offset %llu is %s namespace %u (%llu bytes, %u-byte LBAs)\n",
			(unsigned long long)td->o.start_offset,
			td->o.start_offset >= size ? "past the end of" : "not LBA-aligned in", ef->nsid,
			(unsigned long long)size, lba);
		return eng_fail(td, EINVAL, "nvmeof offset");
	}
	f->real_file_size = size;
	f->filetype = FIO_TYPE_BLOCK;
	fio_file_set_size_known(f);
	return 0;
}

/* Every file's name and options, before anything connects: a filename fio
 * cut at a ':' must not send its first part's cut NQN to a target. */
static int files_configure(struct thread_data *td, struct job *j)
{
	struct fio_file *f, *prev = NULL;
	unsigned int i;
	char err[400];
	for_each_file(td, f, i) {
		if (prev && tid_cut(prev->file_name, f->file_name, err, sizeof(err))) {
			eng_err("nvmeof: filename '%s': %s\n", prev->file_name, err);
			return eng_fail(td, EINVAL, "nvmeof filename");
		}
		prev = f;
	}
	for_each_file(td, f, i) {
		struct efile *ef = FILE_ENG_DATA(f);
		if (ef)
			continue;
		if (!(ef = calloc(1, sizeof(*ef))))
			return eng_fail(td, ENOMEM, "nvmeof setup");
		ef->next = j->files;
		j->files = ef;
		FILE_SET_ENG_DATA(f, ef);
		if (eng_cfg(td, f, &ef->cfg, &ef->nsid))
			return eng_fail(td, EINVAL, "nvmeof filename and options");
	}
	return 0;
}

int files_attach(struct thread_data *td, struct job *j, bool connect)
{
	struct fio_file *f;
	unsigned int i;
	if (files_configure(td, j))
		return 1;
	for_each_file(td, f, i) {
		struct efile *ef = FILE_ENG_DATA(f);
		struct ns_facts nf;
		if (ef->sc)
			continue;
		if (probe_ns(td, ef, connect, &nf))
			return 1;
		ef->lbads = nf.lbads;
		ef->nsze = nf.nsze;
		ef->facts = nf;
		if (check_sizes(td, f, ef) || zones_check(td, f, ef))
			return 1;
	}
	return 0;
}

/* Where the job's region (its offset, offset_increment times its number, plus
 * size=) passes the namespace's end, fio ends the job's pass at its first
 * offset there, and the job at the first pass that starts there: with random
 * offsets such jobs do a few I/Os and stop while one job whose region fits
 * does the rest, and the run measures that one job. fio clips a size= given
 * as a percentage, not one in bytes, so one in bytes is checked here, once
 * fio has set the file's region (before it opens the file). */
int files_check_region(struct thread_data *td, struct fio_file *f)
{
	if (f->file_offset + f->io_size <= f->real_file_size)
		return 0;
	eng_err("nvmeof: job %s.%u: its region, offset %llu plus size %llu, passes the end of the "
		"namespace (%llu bytes): fio would end the job at its first offset past the end; "
		"lower size= or offset_increment=, or give size= as a percentage\n",
		td->o.name, td->subjob_number, (unsigned long long)f->file_offset, (unsigned long long)f->io_size,
		(unsigned long long)f->real_file_size);
	/* ERANGE: with EINVAL and direct=1 fio adds "does not support O_DIRECT" */
	return eng_fail(td, ERANGE, "nvmeof region past the namespace's end");
}

void files_detach(struct job *j)
{
	struct efile *ef, *next;
	for (ef = j->files; ef; ef = next) {
		next = ef->next;
		if (ef->sc)
			share_put(ef->sc);
		explicit_bzero(&ef->cfg, sizeof(ef->cfg)); /* its secrets */
		free(ef->zones);
		free(ef);
	}
	j->files = NULL;
}

int files_open(struct thread_data *td, struct fio_file *f)
{
	return files_check_region(td, f);
}

int files_close(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

int files_size(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	return fio_file_size_known(f) ? 0 : 1;
}
