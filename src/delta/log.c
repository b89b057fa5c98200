/*
 * The log segment: which files of `_delta_log/` rebuild a version.
 *
 * We list the directory once and classify every name.  Commits are
 * NNNNNNNNNNNNNNNNNNNN.json; checkpoints come in three namings: classic
 * (N.checkpoint.parquet), multi-part (N.checkpoint.PPPPPPPPPP.TTTTTTTTTT.parquet,
 * complete only when all T parts are present) and UUID-named v2
 * (N.checkpoint.<uuid>.json|parquet).  Compacted logs (N.M.compacted.json),
 * checksums (.crc), `_last_checkpoint` and anything else are ignored: the
 * listing alone decides, so a corrupt or stale `_last_checkpoint` cannot
 * mislead us.  An entry named like a commit or checkpoint that is not a
 * regular file (a FIFO, socket or device) is refused with DF_ERR_NOT_FILE
 * at listing time, before anything tries to read (and block on) it.
 *
 * The snapshot at version V starts from the newest complete checkpoint at or
 * below V and needs every commit after it up to V; a missing commit is a gap
 * and an error, as is a V beyond the newest version or below the oldest one
 * that can be rebuilt.
 */
#include "delta/delta_int.h"

#include <stdio.h>

static bool all_digits(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

static int64_t parse_digits(const char *s, size_t n) {
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
    return v;
}

df__delta_log_kind df__delta_log_classify(const char *name, int64_t *version, int32_t *part, int32_t *nparts,
                                          bool *is_json) {
    size_t n = strlen(name);
    *part = *nparts = 0;
    *is_json = false;
    /* Twenty digits fit int64 only up to 9223372036854775807; larger prefixes are not versions. */
    if (n < 21 || !all_digits(name, 20) || name[20] != '.' || name[0] == '9') return DF_DELTA_LOG_OTHER;
    *version = parse_digits(name, 20);
    const char *rest = name + 21;
    if (strcmp(rest, "json") == 0) {
        *is_json = true;
        return DF_DELTA_LOG_COMMIT;
    }
    if (strncmp(rest, "checkpoint.", 11) != 0) return DF_DELTA_LOG_OTHER;
    rest += 11;
    if (strcmp(rest, "parquet") == 0) return DF_DELTA_LOG_CHECKPOINT;
    size_t rn = strlen(rest);
    if (rn == 29 && all_digits(rest, 10) && rest[10] == '.' && all_digits(rest + 11, 10) &&
        strcmp(rest + 21, ".parquet") == 0) {
        *part = (int32_t)parse_digits(rest, 10);
        *nparts = (int32_t)parse_digits(rest + 11, 10);
        if (*part < 1 || *nparts < 1 || *part > *nparts) return DF_DELTA_LOG_OTHER;
        return DF_DELTA_LOG_MULTIPART;
    }
    const char *dot = strchr(rest, '.');
    if (!dot || dot == rest) return DF_DELTA_LOG_OTHER;
    if (strcmp(dot, ".json") == 0) {
        *is_json = true;
        return DF_DELTA_LOG_UUID_CHECKPOINT;
    }
    if (strcmp(dot, ".parquet") == 0) return DF_DELTA_LOG_UUID_CHECKPOINT;
    return DF_DELTA_LOG_OTHER;
}

void df__delta_segment_clear(df__delta_segment *seg) {
    for (int32_t i = 0; i < seg->ncheckpoint_files; i++) df_free(seg->checkpoint_files[i]);
    df_free(seg->checkpoint_files);
    for (int64_t i = 0; i < seg->ncommits; i++) df_free(seg->commit_files[i]);
    df_free(seg->commit_files);
    memset(seg, 0, sizeof *seg);
}

/* One checkpoint candidate: a version and the listing indices of its files. */
typedef struct candidate {
    int64_t version;       /* checkpoint version */
    df__delta_log_kind kind;
    int32_t nparts;        /* parts expected (1 unless multi-part) */
    int32_t found;         /* distinct parts present */
    size_t *entries;       /* listing index per part (0-based by part number), owned */
    bool is_json;          /* UUID-named JSON checkpoint */
} candidate;

typedef struct scan_state {
    int64_t *commits;      /* commit versions, ascending (listing is sorted) */
    int64_t ncommits, cap_commits;
    candidate *cands;      /* checkpoint candidates */
    int32_t ncands, cap_cands;
} scan_state;

static void scan_state_free(scan_state *st) {
    for (int32_t i = 0; i < st->ncands; i++) df_free(st->cands[i].entries);
    df_free(st->cands);
    df_free(st->commits);
}

static df_errkind add_commit(scan_state *st, int64_t v, df_error *err) {
    DF_TRY(DF_ARRAY_RESERVE(st->commits, st->cap_commits, st->ncommits + 1, 64, err));
    st->commits[st->ncommits++] = v;
    return DF_OK;
}

/* Finds or creates the candidate for (version, kind, nparts) and records a part. */
static df_errkind add_checkpoint(scan_state *st, int64_t v, df__delta_log_kind kind, int32_t part, int32_t nparts,
                                 bool is_json, size_t entry, df_error *err) {
    if (kind != DF_DELTA_LOG_MULTIPART) part = nparts = 1;
    if (nparts > 100000) return DF_OK; /* implausible: ignore rather than allocate */
    candidate *c = NULL;
    if (kind == DF_DELTA_LOG_MULTIPART)
        for (int32_t i = 0; i < st->ncands; i++)
            if (st->cands[i].version == v && st->cands[i].kind == kind && st->cands[i].nparts == nparts) c = &st->cands[i];
    if (!c) {
        DF_TRY(DF_ARRAY_RESERVE(st->cands, st->cap_cands, st->ncands + 1, 16, err));
        c = &st->cands[st->ncands];
        *c = (candidate){v, kind, nparts, 0, df_malloc((size_t)nparts * sizeof(size_t)), is_json};
        if (!c->entries) return DF_OOM(err);
        for (int32_t i = 0; i < nparts; i++) c->entries[i] = SIZE_MAX;
        st->ncands++;
    }
    if (c->entries[part - 1] == SIZE_MAX) {
        c->entries[part - 1] = entry;
        c->found++;
    }
    return DF_OK;
}

/* Preference among complete checkpoints of one version: v2 UUID-named, classic, multi-part. */
static int kind_rank(df__delta_log_kind k) {
    return k == DF_DELTA_LOG_UUID_CHECKPOINT ? 3 : k == DF_DELTA_LOG_CHECKPOINT ? 2 : 1;
}

static bool has_commit(const scan_state *st, int64_t v) {
    int64_t lo = 0, hi = st->ncommits;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (st->commits[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo < st->ncommits && st->commits[lo] == v;
}

static char *log_path(const char *name) {
    size_t n = strlen(name);
    char *p = df_malloc(n + 12);
    if (p) {
        memcpy(p, "_delta_log/", 11);
        memcpy(p + 11, name, n + 1);
    }
    return p;
}

/* Fills the segment's file lists from the chosen checkpoint (may be NULL) and commit range. */
static df_errkind fill_segment(df__delta_segment *seg, const candidate *cp, const df_store_entry *entries,
                               int64_t first_commit, df_error *err) {
    if (cp) {
        seg->checkpoint_files = df_calloc((size_t)cp->nparts, sizeof(char *));
        if (!seg->checkpoint_files) return DF_OOM(err);
        seg->ncheckpoint_files = cp->nparts;
        for (int32_t i = 0; i < cp->nparts; i++) {
            seg->checkpoint_files[i] = log_path(entries[cp->entries[i]].path);
            if (!seg->checkpoint_files[i]) return DF_OOM(err);
        }
        seg->checkpoint_is_json = cp->is_json;
    }
    int64_t n = seg->version - first_commit + 1;
    if (n > 0) {
        seg->commit_files = df_calloc((size_t)n, sizeof(char *));
        if (!seg->commit_files) return DF_OOM(err);
        seg->ncommits = n;
        for (int64_t i = 0; i < n; i++) {
            char name[40];
            snprintf(name, sizeof name, "%020lld.json", (long long)(first_commit + i));
            seg->commit_files[i] = log_path(name);
            if (!seg->commit_files[i]) return DF_OOM(err);
        }
    }
    return DF_OK;
}

/* Chooses the checkpoint and the commit range; verifies contiguity. */
static df_errkind choose(df__delta_segment *seg, const scan_state *st, const df_store_entry *entries,
                         int64_t below, const char *root, df_error *err) {
    const candidate *best = NULL;
    for (int32_t i = 0; i < st->ncands; i++) {
        const candidate *c = &st->cands[i];
        if (c->found != c->nparts || c->version > seg->version || (below >= 0 && c->version >= below)) continue;
        if (!best || c->version > best->version || (c->version == best->version && kind_rank(c->kind) > kind_rank(best->kind)))
            best = c;
    }
    int64_t first = best ? best->version + 1 : 0;
    if (!best && !has_commit(st, 0)) {
        /* Nothing to start from: name the oldest version that could be rebuilt. */
        int64_t earliest = -1;
        for (int32_t i = 0; i < st->ncands; i++)
            if (st->cands[i].found == st->cands[i].nparts && (earliest < 0 || st->cands[i].version < earliest))
                earliest = st->cands[i].version;
        if (earliest >= 0)
            DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD,
                    "cannot load version %lld of %s: the earliest version that can be reconstructed is %lld",
                    (long long)seg->version, root, (long long)earliest);
        DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD,
                "cannot load version %lld of %s: the log has no checkpoint and starts at version %lld",
                (long long)seg->version, root, (long long)(st->ncommits ? st->commits[0] : -1));
    }
    for (int64_t v = first; v <= seg->version; v++)
        if (!has_commit(st, v))
            DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "Delta log versions are not contiguous: commit %lld is missing in %s",
                    (long long)v, root);
    seg->checkpoint_version = best ? best->version : -1;
    return fill_segment(seg, best, entries, first, err);
}

df_errkind df__delta_segment_build(df_store *store, int64_t version, int64_t below, df__delta_segment *out,
                                   df_error *err) {
    memset(out, 0, sizeof *out);
    out->checkpoint_version = -1;
    df_store_entry *entries = NULL;
    size_t n = 0;
    df_errkind k = store->vt->list(store, "_delta_log", &entries, &n, err);
    if (k == DF_ERR_NOT_FOUND)
        DF_FAIL(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "no Delta log found at %s", store->root);
    if (k != DF_OK) return k;
    scan_state st = {0};
    for (size_t i = 0; i < n && k == DF_OK; i++) {
        if (entries[i].is_dir) continue;
        int64_t v;
        int32_t part, nparts;
        bool is_json;
        df__delta_log_kind kind = df__delta_log_classify(entries[i].path, &v, &part, &nparts, &is_json);
        if (kind != DF_DELTA_LOG_OTHER && entries[i].is_special) {
            /* A FIFO named like a commit would block its reader; a socket or device is no log file either. */
            k = df_error_set(err, DF_ERR_NOT_FILE, "Delta log entry _delta_log/%s of %s is %s, not a regular file",
                             entries[i].path, store->root, df_file_kind_name(entries[i].mode));
            break;
        }
        if (kind == DF_DELTA_LOG_COMMIT) k = add_commit(&st, v, err);
        else if (kind != DF_DELTA_LOG_OTHER) k = add_checkpoint(&st, v, kind, part, nparts, is_json, i, err);
    }
    int64_t latest = -1;
    if (k == DF_OK) {
        if (st.ncommits) latest = st.commits[st.ncommits - 1];
        for (int32_t i = 0; i < st.ncands; i++)
            if (st.cands[i].found == st.cands[i].nparts && st.cands[i].version > latest) latest = st.cands[i].version;
        if (latest < 0) k = df_error_set(err, DF_ERR_DELTA_SNAPSHOT_LOAD, "no Delta log found at %s", store->root);
    }
    if (k == DF_OK && version > latest)
        k = df_error_set(err, DF_ERR_DELTA_SNAPSHOT_LOAD,
                         "cannot load version %lld of %s: the latest version is %lld", (long long)version,
                         store->root, (long long)latest);
    if (k == DF_OK) {
        out->latest_version = latest;
        out->version = version < 0 ? latest : version;
        k = choose(out, &st, entries, below, store->root, err);
    }
    scan_state_free(&st);
    df_store_entries_free(entries, n);
    if (k != DF_OK) df__delta_segment_clear(out);
    return k;
}
