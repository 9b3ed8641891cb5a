/*
 * A small `scrontab` for the local test cluster (Debian's slurm-client 22.05 does not ship one).
 *
 *   scrontab -l      print the user's crontab ("no crontab for USER" when there is none)
 *   scrontab -r      remove it
 *   scrontab FILE    install FILE: every entry becomes a cron job of the real slurmctld
 *
 * It speaks the real RPCs through libslurmfull (slurm_request_crontab, slurm_update_crontab,
 * slurm_remove_crontab), so slurmctld validates, stores and schedules the entries itself and
 * refuses them where ScronParameters lacks `enable`. The file format is scrontab's: blank and
 * `#` lines are skipped, `#SCRON --opt=value` lines apply to the next entry (job-name, chdir,
 * output, partition, account, qos, time), entries are `MIN HOUR DOM MONTH DOW COMMAND` with
 * `*`, `N`, `A-B`, `*\/N` and comma lists. Built by devtools/localslurm/scrontab.py with gcc.
 */
#include <errno.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

/* src/common/cron.h of Slurm 22.05 (not a public header). */
typedef struct {
	uint32_t flags;
	void *minute, *hour, *day_of_month, *month, *day_of_week;
	char *cronspec;
	char *command;
	uint32_t line_start;
	uint32_t line_end;
} cron_entry_t;
enum { WILD_MINUTE = 1 << 1, WILD_HOUR = 1 << 2, WILD_DOM = 1 << 3,
       WILD_MONTH = 1 << 4, WILD_DOW = 1 << 5 };

extern cron_entry_t *new_cron_entry(void);
extern void slurm_bit_set(void *b, int64_t bit);
extern int64_t slurm_bit_size(void *b);
extern char *slurm_xstrdup(const char *str);
extern void *slurm_xcalloc(size_t count, size_t size, bool clear, bool try,
			   const char *file, int line, const char *func);

static char *xdup(const char *s) { return slurm_xstrdup(s); }

/* One time field: fills `b` (lowest value `lo`); returns 0, or -1 when it is not valid. */
static int field(void *b, const char *text, int lo, int hi, int *wild)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", text);
	*wild = !strcmp(buf, "*");
	for (char *part = strtok(buf, ","); part; part = strtok(NULL, ",")) {
		int a = lo, z = hi, step = 1;
		char *slash = strchr(part, '/');
		if (slash) {
			*slash = '\0';
			step = atoi(slash + 1);
			if (step < 1)
				return -1;
		}
		if (strcmp(part, "*")) {
			char *dash = strchr(part, '-');
			a = atoi(part);
			z = dash ? atoi(dash + 1) : (slash ? hi : a);
		}
		if (a < lo || z > hi || a > z)
			return -1;
		for (int i = a; i <= z; i += step)
			slurm_bit_set(b, i);
	}
	return 0;
}

struct opts { char *name, *chdir, *output, *partition, *account, *qos, *time; };

static void scron_line(struct opts *o, const char *line)
{
	const char *keys[] = { "--job-name=", "--chdir=", "--output=", "--partition=",
			       "--account=", "--qos=", "--time=" };
	char **slots[] = { &o->name, &o->chdir, &o->output, &o->partition,
			   &o->account, &o->qos, &o->time };
	while (*line == ' ' || *line == '\t')
		line++;
	for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (!strncmp(line, keys[i], strlen(keys[i])))
			*slots[i] = xdup(line + strlen(keys[i]));
}

static job_desc_msg_t *entry_job(cron_entry_t *e, struct opts *o, int lineno)
{
	job_desc_msg_t *job = slurm_xcalloc(1, sizeof(*job), true, false, __FILE__,
					    __LINE__, __func__);
	struct passwd *pw = getpwuid(getuid());
	char script[8192];

	slurm_init_job_desc_msg(job);
	snprintf(script, sizeof(script), "#!/bin/sh\n# crontab time request was: '%s'\n%s\n",
		 e->cronspec, e->command);
	e->line_start = e->line_end = lineno;
	job->crontab_entry = e;
	job->script = xdup(script);
	job->environment = slurm_xcalloc(2, sizeof(char *), true, false, __FILE__, __LINE__,
					 __func__);
	job->environment[0] = xdup("SLURM_GET_USER_ENV=1");
	job->env_size = 1;
	job->argc = 1;
	job->argv = slurm_xcalloc(2, sizeof(char *), true, false, __FILE__, __LINE__, __func__);
	job->argv[0] = xdup(e->command);
	job->name = o->name ? o->name : xdup("scrontab");
	job->work_dir = o->chdir ? o->chdir : xdup(pw ? pw->pw_dir : "/");
	job->std_out = o->output;
	job->partition = o->partition;
	job->account = o->account;
	job->qos = o->qos;
	if (o->time)
		job->time_limit = (uint32_t) atoi(o->time);
	job->user_id = getuid();
	job->group_id = getgid();
	memset(o, 0, sizeof(*o));
	return job;
}

static cron_entry_t *parse_entry(char *line)
{
	cron_entry_t *e = new_cron_entry();
	void *bits[] = { e->minute, e->hour, e->day_of_month, e->month, e->day_of_week };
	int lo[] = { 0, 0, 1, 1, 0 }, hi[] = { 59, 23, 31, 12, 6 };
	int flag[] = { WILD_MINUTE, WILD_HOUR, WILD_DOM, WILD_MONTH, WILD_DOW };
	char spec[256] = "", *save = NULL, *tok = NULL;
	for (int i = 0; i < 5; i++) {
		int wild = 0;
		tok = strtok_r(i ? NULL : line, " \t", &save);
		if (!tok || field(bits[i], tok, lo[i], hi[i], &wild))
			return NULL;
		if (wild)
			e->flags |= flag[i];
		strncat(spec, tok, sizeof(spec) - strlen(spec) - 2);
		if (i < 4)
			strcat(spec, " ");
	}
	while (save && (*save == ' ' || *save == '\t'))
		save++;
	if (!save || !*save)
		return NULL;
	e->cronspec = xdup(spec);
	e->command = xdup(save);
	return e;
}

static int install(const char *path)
{
	FILE *fh = fopen(path, "r");
	static char text[1 << 20];
	size_t n;
	struct opts o = { 0 };
	List jobs = slurm_list_create(NULL);
	int lineno = 0;

	if (!fh) {
		fprintf(stderr, "scrontab: error: %s: %s\n", path, strerror(errno));
		return 1;
	}
	n = fread(text, 1, sizeof(text) - 1, fh);
	fclose(fh);
	text[n] = '\0';
	char *copy = xdup(text), *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line;
		lineno = 0;
		for (char *q = text; q < text + (line - copy); q++)
			lineno += (*q == '\n');
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, "#SCRON", 6)) {
			scron_line(&o, p + 6);
			continue;
		}
		if (!*p || *p == '#')
			continue;
		cron_entry_t *e = parse_entry(p);
		if (!e) {
			printf("There are errors in your crontab.\n");
			return 1;
		}
		slurm_list_append(jobs, entry_job(e, &o, lineno));
	}
	crontab_update_response_msg_t *r = slurm_update_crontab(getuid(), getgid(), text, jobs);
	if (!r) {
		fprintf(stderr, "scrontab: error: %s\n", slurm_strerror(errno));
		return 1;
	}
	if (r->return_code) {
		printf("There was an issue with the job submission on lines %s\n"
		       "The error code return was: %s\nThe error message was: %s\n",
		       r->failed_lines ? r->failed_lines : "?", slurm_strerror(r->return_code),
		       r->err_msg ? r->err_msg : "");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	slurm_conf_t *conf = NULL;
	if (slurm_load_ctl_conf((time_t) 0, &conf) != SLURM_SUCCESS) {
		fprintf(stderr, "scrontab: error: %s\n", slurm_strerror(slurm_get_errno()));
		return 1;
	}
	if (!conf->scron_params || !strstr(conf->scron_params, "enable")) {
		fprintf(stderr, "scrontab: fatal: scrontab is disabled on this cluster\n");
		return 1;
	}
	if (argc == 2 && !strcmp(argv[1], "-l")) {
		char *crontab = NULL, *disabled = NULL;
		struct passwd *pw = getpwuid(getuid());
		if (slurm_request_crontab(getuid(), &crontab, &disabled) || !crontab) {
			printf("no crontab for %s\n", pw ? pw->pw_name : "?");
			return 0;
		}
		fputs(crontab, stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "-r"))
		return slurm_remove_crontab(getuid(), getgid()) ? 1 : 0;
	if (argc == 2 && argv[1][0] != '-')
		return install(argv[1]);
	fprintf(stderr, "usage: scrontab -l | -r | FILE\n");
	return 2;
}
