/* C test of libthicket: every function of <leveldb/c.h>, including error
   paths, run by .ci/bindings.sh under AddressSanitizer (leaks are errors).
   Prints "N passed, 0 failed" on success; exits 1 at the first failure. */

#include <leveldb/c.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char* phase = "";
static int checks = 0;
static char dbname[512];

#define CHECK(cond)                                                     \
  do {                                                                  \
    checks++;                                                           \
    if (!(cond)) {                                                      \
      fprintf(stderr, "%s:%d: %s: check failed: %s\n", __FILE__, __LINE__, \
              phase, #cond);                                            \
      abort();                                                          \
    }                                                                   \
  } while (0)

#define CHECK_NO_ERROR(err)                                             \
  do {                                                                  \
    checks++;                                                           \
    if ((err) != NULL) {                                                \
      fprintf(stderr, "%s:%d: %s: unexpected error: %s\n", __FILE__,    \
              __LINE__, phase, (err));                                  \
      abort();                                                          \
    }                                                                   \
  } while (0)

/* Expects an error containing `needle`, then frees it. */
#define CHECK_ERROR(err, needle)                                        \
  do {                                                                  \
    CHECK((err) != NULL);                                               \
    if (strstr((err), (needle)) == NULL) {                              \
      fprintf(stderr, "%s:%d: %s: error %s lacks %s\n", __FILE__,       \
              __LINE__, phase, (err), (needle));                        \
      abort();                                                          \
    }                                                                   \
    leveldb_free(err);                                                  \
    (err) = NULL;                                                       \
  } while (0)

static void start_phase(const char* name) {
  fprintf(stderr, "=== %s\n", name);
  phase = name;
}

/* Checks a value a get returned (NULL: absent) and frees it. */
static void check_value(char* value, size_t len, char* err,
                        const char* expected) {
  CHECK_NO_ERROR(err);
  if (expected == NULL) {
    CHECK(value == NULL);
    CHECK(len == 0);
  } else {
    CHECK(value != NULL);
    CHECK(len == strlen(expected));
    CHECK(memcmp(value, expected, len) == 0);
  }
  leveldb_free(value);
}

static void check_get(leveldb_t* db, const leveldb_readoptions_t* ro,
                      const char* key, const char* expected) {
  char* err = NULL;
  size_t len = 12345;
  char* value = leveldb_get(db, ro, key, strlen(key), &len, &err);
  check_value(value, len, err, expected);
}

static void check_get_in(leveldb_t* db, const leveldb_readoptions_t* ro,
                         leveldb_keyspace_t* ks, const char* key,
                         const char* expected) {
  char* err = NULL;
  size_t len = 12345;
  char* value = leveldb_get_in(db, ro, ks, key, strlen(key), &len, &err);
  check_value(value, len, err, expected);
}

/* Checks that the store in `dir` lists exactly `expected` (count names). */
static void check_list(const leveldb_options_t* options, const char* dir,
                       const char* const* expected, size_t count) {
  char* err = NULL;
  size_t n = 99, i;
  char** names = leveldb_list_keyspaces(options, dir, &n, &err);
  CHECK_NO_ERROR(err);
  CHECK(names != NULL);
  CHECK(n == count);
  for (i = 0; i < n && i < count; i++) CHECK(strcmp(names[i], expected[i]) == 0);
  leveldb_list_keyspaces_destroy(names, n);
}

static void check_iter(leveldb_iterator_t* it, const char* key,
                       const char* value) {
  size_t len;
  const char* k;
  const char* v;
  CHECK(leveldb_iter_valid(it));
  k = leveldb_iter_key(it, &len);
  CHECK(len == strlen(key) && memcmp(k, key, len) == 0);
  v = leveldb_iter_value(it, &len);
  CHECK(len == strlen(value) && memcmp(v, value, len) == 0);
}

/* writebatch_iterate callbacks: record "put(k,v)" / "del(k)". */
static char batch_log[1024];
static void on_put(void* state, const char* k, size_t klen, const char* v,
                   size_t vlen) {
  int* count = (int*)state;
  (*count)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "put(%.*s,%.*s)", (int)klen, k, (int)vlen, v);
}
static void on_delete(void* state, const char* k, size_t klen) {
  int* count = (int*)state;
  (*count)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "del(%.*s)", (int)klen, k);
}

static void on_delete_range(void* state, const char* s, size_t slen,
                            const char* e, size_t elen) {
  int* count = (int*)state;
  (*count)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "delrange(%.*s,%.*s)", (int)slen, s, (int)elen, e);
}

/* Comparator and filter policy callbacks. */
/* writebatch_iterate_in callbacks: record "put@ks(k,v)" and the like. */
static void on_put_in(void* state, const char* ks, const char* k, size_t klen,
                      const char* v, size_t vlen) {
  (*(int*)state)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "put@%s(%.*s,%.*s)", ks, (int)klen, k, (int)vlen, v);
}
static void on_delete_in(void* state, const char* ks, const char* k,
                         size_t klen) {
  (*(int*)state)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "del@%s(%.*s)", ks, (int)klen, k);
}
static void on_delete_range_in(void* state, const char* ks, const char* s,
                               size_t slen, const char* e, size_t elen) {
  (*(int*)state)++;
  snprintf(batch_log + strlen(batch_log), sizeof(batch_log) - strlen(batch_log),
           "delrange@%s(%.*s,%.*s)", ks, (int)slen, s, (int)elen, e);
}

static int destroyed_comparators = 0;
/* The custom filter policy's state: what its callbacks saw and what
   key_may_match answers (LevelDB's c_test `fake_filter_result`). */
static struct {
  int destroyed;
  int filters_created;
  int keys_filtered;
  int probes;
  uint8_t match_result;
} policy_state;
static void comparator_destroy(void* state) {
  CHECK(state == (void*)&destroyed_comparators);
  destroyed_comparators++;
}
static int comparator_compare(void* state, const char* a, size_t alen,
                              const char* b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  int r = memcmp(a, b, n);
  (void)state;
  if (r == 0) r = alen < blen ? -1 : alen > blen ? 1 : 0;
  return -r;
}
static const char* comparator_name(void* state) {
  (void)state;
  return "test.reverse";
}
static void policy_destroy(void* state) {
  CHECK(state == (void*)&policy_state);
  policy_state.destroyed++;
}
static const char* policy_name(void* state) {
  (void)state;
  return "test.policy";
}
static char* policy_create(void* state, const char* const* keys,
                           const size_t* lens, int n, size_t* filter_len) {
  char* filter = malloc(4);
  int i;
  CHECK(state == (void*)&policy_state);
  CHECK(n > 0);
  for (i = 0; i < n; i++) CHECK(keys[i] != NULL || lens[i] == 0);
  policy_state.filters_created++;
  policy_state.keys_filtered += n;
  memcpy(filter, "fake", 4);
  *filter_len = 4;
  return filter;
}
static uint8_t policy_match(void* state, const char* key, size_t len,
                            const char* filter, size_t filter_len) {
  (void)key; (void)len;
  CHECK(state == (void*)&policy_state);
  CHECK(filter_len == 4 && memcmp(filter, "fake", 4) == 0);
  policy_state.probes++;
  return policy_state.match_result;
}

/* Removes CURRENT and every MANIFEST-* of the store: a lost MANIFEST. */
static void remove_manifests(const char* dir) {
  char path[1024];
  struct dirent* e;
  DIR* d = opendir(dir);
  CHECK(d != NULL);
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, "CURRENT") == 0 ||
        strncmp(e->d_name, "MANIFEST-", 9) == 0) {
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      CHECK(unlink(path) == 0);
    }
  }
  closedir(d);
}

/* Flips a byte near the start of every segment file: the first data block
   of each segment's first table no longer matches its checksum. */
static void damage_segments(const char* dir) {
  char path[1024];
  struct dirent* e;
  DIR* d = opendir(dir);
  CHECK(d != NULL);
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".seg") == 0) {
      FILE* f;
      int c;
      snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
      f = fopen(path, "r+b");
      CHECK(f != NULL);
      CHECK(fseek(f, 40, SEEK_SET) == 0);
      c = fgetc(f);
      CHECK(c != EOF);
      CHECK(fseek(f, 40, SEEK_SET) == 0);
      fputc(c ^ 0xff, f);
      fclose(f);
    }
  }
  closedir(d);
}

static void write_file(const char* dir, const char* name, const char* text) {
  char path[1024];
  FILE* f;
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  f = fopen(path, "w");
  CHECK(f != NULL);
  fputs(text, f);
  fclose(f);
}

int main(void) {
  leveldb_t* db;
  leveldb_comparator_t* cmp;
  leveldb_filterpolicy_t* policy;
  leveldb_cache_t* cache;
  leveldb_env_t* env;
  leveldb_options_t* options;
  leveldb_readoptions_t* roptions;
  leveldb_writeoptions_t* woptions;
  char* err = NULL;
  char* testdir;
  char key[32], value[32];
  int i;

  start_phase("version");
  CHECK(leveldb_major_version() == 1);
  CHECK(leveldb_minor_version() >= 20);

  start_phase("env");
  env = leveldb_create_default_env();
  testdir = leveldb_env_get_test_directory(env);
  CHECK(testdir != NULL);
  snprintf(dbname, sizeof(dbname), "%s/thicket_c_test-%d", testdir,
           (int)geteuid());
  leveldb_free(testdir);

  start_phase("options");
  cache = leveldb_cache_create_lru(1 << 20);
  options = leveldb_options_create();
  leveldb_options_set_comparator(options, NULL);
  leveldb_options_set_error_if_exists(options, 1);
  leveldb_options_set_cache(options, cache);
  leveldb_options_set_env(options, env);
  leveldb_options_set_info_log(options, NULL);
  leveldb_options_set_write_buffer_size(options, 100000);
  leveldb_options_set_paranoid_checks(options, 1);
  leveldb_options_set_max_open_files(options, 10);
  leveldb_options_set_block_size(options, 1024);
  leveldb_options_set_block_restart_interval(options, 8);
  leveldb_options_set_max_file_size(options, 3 << 20);
  leveldb_options_set_compression(options, leveldb_no_compression);
  leveldb_options_set_compression(options, leveldb_snappy_compression);
  roptions = leveldb_readoptions_create();
  leveldb_readoptions_set_verify_checksums(roptions, 1);
  leveldb_readoptions_set_fill_cache(roptions, 0);
  woptions = leveldb_writeoptions_create();
  leveldb_writeoptions_set_sync(woptions, 1);

  start_phase("destroy");
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);

  start_phase("open_missing_store");
  leveldb_options_set_create_if_missing(options, 0);
  /* An old message in *errptr is freed and replaced (ASan reports a leak
     otherwise). */
  err = malloc(4);
  strcpy(err, "old");
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "create_if_missing");

  start_phase("open");
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(db != NULL);
  check_get(db, roptions, "foo", NULL);

  start_phase("open_locked");
  {
    leveldb_options_t* again = leveldb_options_create();
    leveldb_t* second = leveldb_open(again, dbname, &err);
    CHECK(second == NULL);
    CHECK_ERROR(err, "IO error");
    leveldb_options_destroy(again);
  }

  start_phase("put_get_delete");
  leveldb_put(db, woptions, "foo", 3, "hello", 5, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "foo", "hello");
  leveldb_put(db, woptions, "empty", 5, "", 0, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "empty", "");
  leveldb_delete(db, woptions, "empty", 5, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "empty", NULL);
  leveldb_put(db, woptions, "bin\0key", 7, "v\0v", 3, &err);
  CHECK_NO_ERROR(err);
  {
    size_t len;
    char* v = leveldb_get(db, roptions, "bin\0key", 7, &len, &err);
    CHECK_NO_ERROR(err);
    CHECK(v != NULL && len == 3 && memcmp(v, "v\0v", 3) == 0);
    leveldb_free(v);
  }
  leveldb_delete(db, woptions, "bin\0key", 7, &err);
  CHECK_NO_ERROR(err);

  start_phase("writebatch");
  {
    int count = 0;
    leveldb_writebatch_t* wb = leveldb_writebatch_create();
    leveldb_writebatch_t* more = leveldb_writebatch_create();
    leveldb_writebatch_put(wb, "foo", 3, "a", 1);
    leveldb_writebatch_clear(wb);
    leveldb_writebatch_put(wb, "bar", 3, "b", 1);
    leveldb_writebatch_put(wb, "box", 3, "c", 1);
    leveldb_writebatch_delete(more, "bar", 3);
    leveldb_writebatch_append(wb, more);
    leveldb_write(db, woptions, wb, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "foo", "hello");
    check_get(db, roptions, "bar", NULL);
    check_get(db, roptions, "box", "c");
    batch_log[0] = '\0';
    leveldb_writebatch_iterate(wb, &count, on_put, on_delete);
    CHECK(count == 3);
    CHECK(strcmp(batch_log, "put(bar,b)put(box,c)del(bar)") == 0);
    /* Range deletions: in a batch and alone; iterate passes them over,
       iterate_ranges reports them in order. */
    leveldb_writebatch_clear(wb);
    leveldb_writebatch_put(wb, "rd1", 3, "x", 1);
    leveldb_writebatch_put(wb, "rd2", 3, "x", 1);
    leveldb_writebatch_put(wb, "rd3", 3, "x", 1);
    leveldb_writebatch_delete_range(wb, "rd1", 3, "rd3", 3);
    leveldb_write(db, woptions, wb, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "rd1", NULL);
    check_get(db, roptions, "rd2", NULL);
    check_get(db, roptions, "rd3", "x");
    count = 0;
    batch_log[0] = '\0';
    leveldb_writebatch_iterate(wb, &count, on_put, on_delete);
    CHECK(count == 3);
    count = 0;
    batch_log[0] = '\0';
    leveldb_writebatch_iterate_ranges(wb, &count, on_put, on_delete,
                                      on_delete_range);
    CHECK(count == 4);
    CHECK(strcmp(batch_log,
                 "put(rd1,x)put(rd2,x)put(rd3,x)delrange(rd1,rd3)") == 0);
    leveldb_delete_range(db, woptions, "rd3", 3, "rd4", 3, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "rd3", NULL);
    check_get(db, roptions, "box", "c");
    /* An inverted range deletes nothing, as an empty one. */
    leveldb_delete_range(db, woptions, "c", 1, "a", 1, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "box", "c");
    /* A key over the engine's 64 KiB limit fails the write, atomically. */
    {
      size_t big_len = 70000;
      char* big = calloc(big_len, 1);
      leveldb_writebatch_clear(wb);
      leveldb_writebatch_put(wb, "fine", 4, "x", 1);
      leveldb_writebatch_put(wb, big, big_len, "x", 1);
      leveldb_write(db, woptions, wb, &err);
      CHECK_ERROR(err, "Invalid argument");
      check_get(db, roptions, "fine", NULL);
      leveldb_put(db, woptions, big, big_len, "x", 1, &err);
      CHECK_ERROR(err, "Invalid argument");
      free(big);
    }
    leveldb_writebatch_destroy(more);
    leveldb_writebatch_destroy(wb);
  }

  start_phase("iter");
  {
    size_t len;
    leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
    CHECK(!leveldb_iter_valid(iter));
    CHECK(leveldb_iter_key(iter, &len) == NULL && len == 0);
    leveldb_iter_next(iter); /* a no-op on an invalid iterator */
    leveldb_iter_seek_to_first(iter);
    check_iter(iter, "box", "c");
    leveldb_iter_next(iter);
    check_iter(iter, "foo", "hello");
    leveldb_iter_prev(iter);
    check_iter(iter, "box", "c");
    leveldb_iter_prev(iter);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_seek_to_last(iter);
    check_iter(iter, "foo", "hello");
    leveldb_iter_seek(iter, "b", 1);
    check_iter(iter, "box", "c");
    leveldb_iter_seek(iter, "zzz", 3);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_get_error(iter, &err);
    CHECK_NO_ERROR(err);
    leveldb_iter_destroy(iter);
  }

  start_phase("snapshot");
  {
    leveldb_readoptions_t* at_snapshot = leveldb_readoptions_create();
    const leveldb_snapshot_t* snap = leveldb_create_snapshot(db);
    leveldb_iterator_t* iter;
    leveldb_delete(db, woptions, "foo", 3, &err);
    CHECK_NO_ERROR(err);
    leveldb_put(db, woptions, "new", 3, "later", 5, &err);
    CHECK_NO_ERROR(err);
    leveldb_readoptions_set_snapshot(at_snapshot, snap);
    check_get(db, at_snapshot, "foo", "hello");
    check_get(db, at_snapshot, "new", NULL);
    check_get(db, roptions, "foo", NULL);
    check_get(db, roptions, "new", "later");
    /* An iterator across the snapshot sees the old state in both
       directions, while later writes continue. */
    iter = leveldb_create_iterator(db, at_snapshot);
    leveldb_put(db, woptions, "zebra", 5, "z", 1, &err);
    CHECK_NO_ERROR(err);
    leveldb_iter_seek_to_first(iter);
    check_iter(iter, "box", "c");
    leveldb_iter_next(iter);
    check_iter(iter, "foo", "hello");
    leveldb_iter_next(iter);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_seek_to_last(iter);
    check_iter(iter, "foo", "hello");
    leveldb_iter_get_error(iter, &err);
    CHECK_NO_ERROR(err);
    leveldb_iter_destroy(iter);
    leveldb_readoptions_set_snapshot(at_snapshot, NULL);
    check_get(db, at_snapshot, "foo", NULL);
    leveldb_release_snapshot(db, snap);
    leveldb_readoptions_destroy(at_snapshot);
  }

  start_phase("approximate_sizes_and_compact_range");
  {
    int n;
    uint64_t sizes[2];
    const char* start[2] = {"a", "k20000"};
    size_t start_len[2] = {1, 6};
    const char* limit[2] = {"k00000" "\xff", "k20000"};
    size_t limit_len[2] = {7, 6};
    leveldb_writeoptions_set_sync(woptions, 0);
    for (n = 0; n < 20000; n++) {
      snprintf(key, sizeof(key), "k%05d", n);
      snprintf(value, sizeof(value), "v%05d-%020d", n, n);
      leveldb_put(db, woptions, key, strlen(key), value, strlen(value), &err);
      CHECK_NO_ERROR(err);
    }
    limit[0] = "k20000";
    limit_len[0] = 6;
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    leveldb_compact_range(db, "k0", 2, "k1", 2);
    leveldb_approximate_sizes(db, 2, start, start_len, limit, limit_len, sizes);
    CHECK(sizes[0] > 20000 * 10); /* LZ4 halves these values */
    CHECK(sizes[0] < 20000 * 200);
    CHECK(sizes[1] == 0);
    check_get(db, roptions, "k12345", "v12345-00000000000000012345");
  }

  start_phase("property");
  {
    char* prop = leveldb_property_value(db, "nosuchprop");
    CHECK(prop == NULL);
    prop = leveldb_property_value(db, "leveldb.stats");
    CHECK(prop != NULL && strstr(prop, "Level") != NULL);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.num-files-at-level0");
    /* The full compact_range above left no table in level 0. */
    CHECK(prop != NULL && strcmp(prop, "0") == 0);
    leveldb_free(prop);
    prop = leveldb_property_value(db, "leveldb.num-files-at-level99");
    CHECK(prop == NULL);
    prop = leveldb_property_value(db, "leveldb.sstables");
    CHECK(prop != NULL && strstr(prop, "--- level 0 ---") != NULL);
    leveldb_free(prop);
    leveldb_put(db, woptions, "in-memtable", 11, "v", 1, &err);
    CHECK_NO_ERROR(err);
    prop = leveldb_property_value(db, "leveldb.approximate-memory-usage");
    CHECK(prop != NULL && atol(prop) > 0);
    leveldb_free(prop);
  }

  start_phase("destroy_open_store");
  leveldb_destroy_db(options, dbname, &err);
  CHECK_ERROR(err, "IO error");

  start_phase("error_if_exists");
  leveldb_close(db);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "exists");
  leveldb_options_set_error_if_exists(options, 0);

  start_phase("repair");
  remove_manifests(dbname);
  leveldb_options_set_create_if_missing(options, 0);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "create_if_missing");
  leveldb_repair_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "foo", NULL);
  check_get(db, roptions, "box", "c");
  check_get(db, roptions, "k00000", "v00000-00000000000000000000");
  check_get(db, roptions, "k19999", "v19999-00000000000000019999");
  leveldb_close(db);
  leveldb_repair_db(options, "/nonexistent/thicket-c-test", &err);
  CHECK_ERROR(err, "Invalid argument");

  start_phase("corrupt_store");
  write_file(dbname, "CURRENT", "not a manifest name\n");
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "Corruption");
  leveldb_repair_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "k10000", "v10000-00000000000000010000");
  leveldb_close(db);

  start_phase("corrupt_table");
  damage_segments(dbname);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  {
    size_t len;
    char* v = leveldb_get(db, roptions, "box", 3, &len, &err);
    CHECK(v == NULL);
    CHECK_ERROR(err, "Corruption");
  }
  {
    leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
    leveldb_iter_seek_to_first(iter);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_get_error(iter, &err);
    CHECK_ERROR(err, "Corruption");
    leveldb_iter_destroy(iter);
  }
  leveldb_close(db);
  /* Repair keeps the entries of the blocks that still verify. */
  leveldb_repair_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  {
    leveldb_iterator_t* iter = leveldb_create_iterator(db, roptions);
    leveldb_iter_seek_to_first(iter);
    while (leveldb_iter_valid(iter)) leveldb_iter_next(iter);
    leveldb_iter_get_error(iter, &err);
    CHECK_NO_ERROR(err);
    leveldb_iter_destroy(iter);
  }
  check_get(db, roptions, "k19999", "v19999-00000000000000019999");
  leveldb_put(db, woptions, "box", 3, "c", 1, &err);
  CHECK_NO_ERROR(err);
  leveldb_close(db);

  start_phase("comparator");
  destroyed_comparators = 0;
  cmp = leveldb_comparator_create(&destroyed_comparators, comparator_destroy,
                                  comparator_compare, comparator_name);
  leveldb_options_set_comparator(options, cmp);
  /* The store was created in byte order: another order is refused. */
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "test.reverse");
  /* A new store orders its keys by the comparator (reverse bytes), in
     memory, in tables and across a reopen. */
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  leveldb_options_set_create_if_missing(options, 1);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "a", 1, "1", 1, &err);
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "c", 1, "3", 1, &err);
  CHECK_NO_ERROR(err);
  leveldb_put(db, woptions, "b", 1, "2", 1, &err);
  CHECK_NO_ERROR(err);
  for (i = 0; i < 2; i++) {
    leveldb_iterator_t* it = leveldb_create_iterator(db, roptions);
    leveldb_iter_seek_to_first(it);
    check_iter(it, "c", "3");
    leveldb_iter_next(it);
    check_iter(it, "b", "2");
    leveldb_iter_next(it);
    check_iter(it, "a", "1");
    leveldb_iter_next(it);
    CHECK(!leveldb_iter_valid(it));
    leveldb_iter_seek(it, "bb", 2); /* between c and b in reverse order */
    check_iter(it, "b", "2");
    leveldb_iter_destroy(it);
    check_get(db, roptions, "b", "2");
    check_get(db, roptions, "bb", NULL);
    /* Second round: the keys come from a table. */
    leveldb_compact_range(db, NULL, 0, NULL, 0);
  }
  leveldb_close(db);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  check_get(db, roptions, "c", "3");
  leveldb_close(db);
  leveldb_options_set_comparator(options, NULL);
  db = leveldb_open(options, dbname, &err);
  CHECK(db == NULL);
  CHECK_ERROR(err, "test.reverse");
  /* The destructor runs once, when the last holder lets go. */
  CHECK(destroyed_comparators == 0);
  leveldb_comparator_destroy(cmp);
  CHECK(destroyed_comparators == 1);
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);

  start_phase("filter");
  /* As LevelDB's c_test: a custom policy (run 0), then the Bloom filter. */
  leveldb_options_set_create_if_missing(options, 1);
  leveldb_options_set_error_if_exists(options, 0);
  for (i = 0; i < 2; i++) {
    memset(&policy_state, 0, sizeof(policy_state));
    policy_state.match_result = 1;
    policy = i == 0 ? leveldb_filterpolicy_create(&policy_state,
                                                  policy_destroy, policy_create,
                                                  policy_match, policy_name)
                    : leveldb_filterpolicy_create_bloom(16);
    leveldb_destroy_db(options, dbname, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_filter_policy(options, policy);
    db = leveldb_open(options, dbname, &err);
    CHECK_NO_ERROR(err);
    leveldb_put(db, woptions, "foo", 3, "foovalue", 8, &err);
    CHECK_NO_ERROR(err);
    leveldb_put(db, woptions, "bar", 3, "barvalue", 8, &err);
    CHECK_NO_ERROR(err);
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    check_get(db, roptions, "foo", "foovalue");
    check_get(db, roptions, "bar", "barvalue");
    check_get(db, roptions, "unfiltered", NULL);
    if (i == 0) {
      /* The policy built the table's filter over its two keys ... */
      CHECK(policy_state.filters_created >= 1);
      CHECK(policy_state.keys_filtered >= 2);
      CHECK(policy_state.probes >= 2);
      /* ... and a "no" from it hides the keys, */
      policy_state.match_result = 0;
      check_get(db, roptions, "foo", NULL);
      check_get(db, roptions, "bar", NULL);
      /* which a "yes" shows again. */
      policy_state.match_result = 1;
      check_get(db, roptions, "foo", "foovalue");
      check_get(db, roptions, "bar", "barvalue");
    }
    leveldb_close(db);
    leveldb_options_set_filter_policy(options, NULL);
    leveldb_filterpolicy_destroy(policy);
    CHECK(policy_state.destroyed == (i == 0 ? 1 : 0));
  }

  start_phase("filter_outlives_its_handle");
  /* The policy destroyed while a store uses it: its destructor waits for
     the store (LevelDB requires the policy to outlive the store; we do not
     rely on it, and never run the destructor twice). */
  memset(&policy_state, 0, sizeof(policy_state));
  policy_state.match_result = 0;
  policy = leveldb_filterpolicy_create(&policy_state, policy_destroy,
                                       policy_create, policy_match,
                                       policy_name);
  leveldb_options_set_filter_policy(options, policy);
  db = leveldb_open(options, dbname, &err);
  CHECK_NO_ERROR(err);
  leveldb_options_set_filter_policy(options, NULL);
  leveldb_filterpolicy_destroy(policy);
  CHECK(policy_state.destroyed == 0);
  check_get(db, roptions, "foo", "foovalue"); /* a Bloom table: unfiltered */
  leveldb_close(db);
  CHECK(policy_state.destroyed == 1);

  start_phase("cache");
  /* Two stores share one cache; same keys, same value lengths, so their
     segment numbers and block offsets coincide. */
  {
    leveldb_cache_t* shared = leveldb_cache_create_lru(64 << 10);
    leveldb_readoptions_t* filling = leveldb_readoptions_create();
    leveldb_t* other;
    char othername[600];
    int round;
    snprintf(othername, sizeof(othername), "%s-other", dbname);
    leveldb_destroy_db(options, othername, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_cache(options, shared);
    db = leveldb_open(options, dbname, &err);
    CHECK_NO_ERROR(err);
    other = leveldb_open(options, othername, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_cache(options, cache);
    for (i = 0; i < 200; i++) {
      snprintf(key, sizeof(key), "key%05d", i);
      snprintf(value, sizeof(value), "one%05d", i);
      leveldb_put(db, woptions, key, strlen(key), value, strlen(value), &err);
      CHECK_NO_ERROR(err);
      snprintf(value, sizeof(value), "two%05d", i);
      leveldb_put(other, woptions, key, strlen(key), value, strlen(value),
                  &err);
      CHECK_NO_ERROR(err);
    }
    leveldb_compact_range(db, NULL, 0, NULL, 0);
    leveldb_compact_range(other, NULL, 0, NULL, 0);
    /* The stores keep the cache after the user's handle is gone. */
    leveldb_cache_destroy(shared);
    for (round = 0; round < 2; round++) {
      for (i = 0; i < 200; i++) {
        snprintf(key, sizeof(key), "key%05d", i);
        snprintf(value, sizeof(value), "one%05d", i);
        check_get(db, filling, key, value);
        snprintf(value, sizeof(value), "two%05d", i);
        check_get(other, filling, key, value);
      }
    }
    leveldb_close(other);
    leveldb_close(db);
    leveldb_destroy_db(options, othername, &err);
    CHECK_NO_ERROR(err);
    leveldb_readoptions_destroy(filling);
  }

  start_phase("keyspaces");
  {
    static const char* const both[] = {"default", "users"};
    static const char* const three[] = {"default", "users", "temp"};
    char ksname[600];
    leveldb_options_t* ks_options = leveldb_options_create();
    leveldb_readoptions_t* at_snapshot = leveldb_readoptions_create();
    leveldb_writebatch_t* wb = leveldb_writebatch_create();
    leveldb_keyspace_t *users, *again, *temp, *again_temp, *deflt;
    leveldb_iterator_t* iter;
    const leveldb_snapshot_t* snap;
    size_t len, n;
    char* name;
    int count = 0;
    snprintf(ksname, sizeof(ksname), "%s-keyspaces", dbname);
    leveldb_destroy_db(options, ksname, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_error_if_exists(options, 0);
    leveldb_options_set_create_if_missing(options, 1);
    db = leveldb_open(options, ksname, &err);
    CHECK_NO_ERROR(err);
    leveldb_options_set_compression(ks_options, leveldb_no_compression);
    leveldb_options_set_write_buffer_size(ks_options, 64 << 10);
    users = leveldb_create_keyspace(db, ks_options, "users", &err);
    CHECK_NO_ERROR(err);
    CHECK(users != NULL);
    name = leveldb_keyspace_name(users, &len);
    CHECK(name != NULL && len == 5 && strcmp(name, "users") == 0);
    leveldb_free(name);
    /* A taken or empty name is refused; the old message is replaced. */
    CHECK(leveldb_create_keyspace(db, ks_options, "users", &err) == NULL);
    CHECK(err != NULL);
    CHECK(leveldb_create_keyspace(db, ks_options, "", &err) == NULL);
    CHECK_ERROR(err, "Invalid argument");
    /* Keyspaces are separate namespaces. */
    leveldb_put_in(db, woptions, users, "alice", 5, "admin", 5, &err);
    CHECK_NO_ERROR(err);
    leveldb_put(db, woptions, "alice", 5, "default", 7, &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, users, "alice", "admin");
    check_get(db, roptions, "alice", "default");
    deflt = leveldb_open_keyspace(db, "default", &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, deflt, "alice", "default");
    leveldb_put_in(db, woptions, users, "gone", 4, "x", 1, &err);
    CHECK_NO_ERROR(err);
    leveldb_delete_in(db, woptions, users, "gone", 4, &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, users, "gone", NULL);
    for (i = 0; i < 5; i++) {
      snprintf(key, sizeof(key), "r%d", i);
      leveldb_put_in(db, woptions, users, key, strlen(key), "v", 1, &err);
      CHECK_NO_ERROR(err);
    }
    leveldb_delete_range_in(db, woptions, users, "r1", 2, "r4", 2, &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, users, "r0", "v");
    check_get_in(db, roptions, users, "r2", NULL);
    check_get_in(db, roptions, users, "r4", "v");
    /* A batch across keyspaces; iterate reports only the default ones. */
    leveldb_writebatch_put(wb, "count", 5, "2", 1);
    leveldb_writebatch_put_in(wb, users, "bob", 3, "guest", 5);
    leveldb_writebatch_delete_in(wb, users, "r0", 2);
    leveldb_writebatch_delete_range_in(wb, users, "r4", 2, "r9", 2);
    leveldb_writebatch_delete(wb, "alice", 5);
    leveldb_write(db, woptions, wb, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "count", "2");
    check_get(db, roptions, "alice", NULL);
    check_get(db, roptions, "bob", NULL);
    check_get_in(db, roptions, users, "bob", "guest");
    check_get_in(db, roptions, users, "r0", NULL);
    check_get_in(db, roptions, users, "r4", NULL);
    batch_log[0] = '\0';
    leveldb_writebatch_iterate(wb, &count, on_put, on_delete);
    CHECK(count == 2);
    CHECK(strcmp(batch_log, "put(count,2)del(alice)") == 0);
    count = 0;
    batch_log[0] = '\0';
    leveldb_writebatch_iterate_in(wb, &count, on_put_in, on_delete_in,
                                  on_delete_range_in);
    CHECK(count == 5);
    CHECK(strcmp(batch_log,
                 "put@default(count,2)put@users(bob,guest)del@users(r0)"
                 "delrange@users(r4,r9)del@default(alice)") == 0);
    leveldb_writebatch_iterate_in(wb, &count, NULL, NULL, NULL);
    CHECK(count == 5);
    /* An update through a handle on "default" is a default-keyspace one. */
    leveldb_writebatch_clear(wb);
    leveldb_writebatch_put_in(wb, deflt, "viahandle", 9, "d", 1);
    count = 0;
    batch_log[0] = '\0';
    leveldb_writebatch_iterate(wb, &count, on_put, on_delete);
    CHECK(strcmp(batch_log, "put(viahandle,d)") == 0);
    leveldb_write(db, woptions, wb, &err);
    CHECK_NO_ERROR(err);
    check_get(db, roptions, "viahandle", "d");
    /* A handle by name sees the same keyspace; iterators and snapshots. */
    again = leveldb_open_keyspace(db, "users", &err);
    CHECK_NO_ERROR(err);
    snap = leveldb_create_snapshot(db);
    leveldb_readoptions_set_snapshot(at_snapshot, snap);
    leveldb_put_in(db, woptions, again, "carol", 5, "new", 3, &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, at_snapshot, users, "carol", NULL);
    check_get_in(db, roptions, users, "carol", "new");
    iter = leveldb_create_iterator_in(db, roptions, users);
    leveldb_iter_seek_to_first(iter);
    check_iter(iter, "alice", "admin");
    leveldb_iter_next(iter);
    check_iter(iter, "bob", "guest");
    leveldb_iter_next(iter);
    check_iter(iter, "carol", "new");
    leveldb_iter_next(iter);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_get_error(iter, &err);
    CHECK_NO_ERROR(err);
    leveldb_iter_destroy(iter);
    leveldb_release_snapshot(db, snap);
    leveldb_readoptions_destroy(at_snapshot);
    leveldb_compact_range_in(db, users, NULL, 0, NULL, 0);
    check_get_in(db, roptions, users, "bob", "guest");
    /* Unknown and dropped keyspaces. */
    CHECK(leveldb_open_keyspace(db, "nope", &err) == NULL);
    CHECK_ERROR(err, "NotFound");
    temp = leveldb_create_keyspace(db, ks_options, "temp", &err);
    CHECK_NO_ERROR(err);
    leveldb_put_in(db, woptions, temp, "t", 1, "1", 1, &err);
    CHECK_NO_ERROR(err);
    check_list(options, ksname, three, 3);
    leveldb_drop_keyspace(db, temp, &err);
    CHECK_NO_ERROR(err);
    CHECK(leveldb_get_in(db, roptions, temp, "t", 1, &len, &err) == NULL);
    CHECK_ERROR(err, "NotFound");
    leveldb_put_in(db, woptions, temp, "t", 1, "1", 1, &err);
    CHECK_ERROR(err, "NotFound");
    iter = leveldb_create_iterator_in(db, roptions, temp);
    leveldb_iter_seek_to_first(iter);
    CHECK(!leveldb_iter_valid(iter));
    leveldb_iter_get_error(iter, &err);
    CHECK_ERROR(err, "NotFound");
    leveldb_iter_destroy(iter);
    CHECK(leveldb_open_keyspace(db, "temp", &err) == NULL);
    CHECK_ERROR(err, "NotFound");
    /* The old handle cannot drop a new keyspace of the same name. */
    again_temp = leveldb_create_keyspace(db, ks_options, "temp", &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, again_temp, "t", NULL);
    leveldb_drop_keyspace(db, temp, &err);
    CHECK_ERROR(err, "NotFound");
    leveldb_put_in(db, woptions, again_temp, "t", 1, "2", 1, &err);
    CHECK_NO_ERROR(err);
    leveldb_drop_keyspace(db, again_temp, &err);
    CHECK_NO_ERROR(err);
    leveldb_keyspace_handle_destroy(again_temp);
    leveldb_drop_keyspace(db, deflt, &err);
    CHECK_ERROR(err, "Invalid argument");
    leveldb_keyspace_handle_destroy(temp);
    leveldb_keyspace_handle_destroy(deflt);
    leveldb_keyspace_handle_destroy(again);
    leveldb_keyspace_handle_destroy(users);
    leveldb_keyspace_handle_destroy(NULL);
    /* Listing works on the open store and after a reopen, where the data
       is back. */
    check_list(options, ksname, both, 2);
    leveldb_close(db);
    check_list(options, ksname, both, 2);
    db = leveldb_open(options, ksname, &err);
    CHECK_NO_ERROR(err);
    users = leveldb_open_keyspace(db, "users", &err);
    CHECK_NO_ERROR(err);
    check_get_in(db, roptions, users, "alice", "admin");
    check_get_in(db, roptions, users, "bob", "guest");
    check_get_in(db, roptions, users, "r2", NULL);
    check_get(db, roptions, "count", "2");
    check_get(db, roptions, "bob", NULL);
    CHECK(leveldb_open_keyspace(db, "temp", &err) == NULL);
    CHECK_ERROR(err, "NotFound");
    leveldb_keyspace_handle_destroy(users);
    leveldb_close(db);
    /* No store, no list. */
    leveldb_destroy_db(options, ksname, &err);
    CHECK_NO_ERROR(err);
    n = 7;
    CHECK(leveldb_list_keyspaces(options, ksname, &n, &err) == NULL);
    CHECK(n == 0);
    CHECK_ERROR(err, "");
    leveldb_writebatch_destroy(wb);
    leveldb_options_destroy(ks_options);
    leveldb_options_set_error_if_exists(options, 1);
  }

  start_phase("cleanup");
  leveldb_destroy_db(options, dbname, &err);
  CHECK_NO_ERROR(err);
  CHECK(access(dbname, F_OK) != 0);
  leveldb_options_destroy(options);
  leveldb_readoptions_destroy(roptions);
  leveldb_writeoptions_destroy(woptions);
  leveldb_cache_destroy(cache);
  leveldb_env_destroy(env);

  printf("c_test: %d passed, 0 failed\n", checks);
  return 0;
}
