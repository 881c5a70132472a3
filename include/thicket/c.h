/* ThicketDB C API: LevelDB's C API (include/leveldb/c.h, LevelDB 1.23),
   implemented by libthicket (crates/thicket-c).

   Every function below has LevelDB's name, signature and semantics, so a
   program written against LevelDB's C API compiles against this header
   (or <leveldb/c.h>, which includes it) and links with -lthicket.

   Conventions (as LevelDB):
   (1) Opaque struct pointers only.
   (2) Keys and values are a pointer and a length; they may hold any bytes.
   (3) Errors: operations that can fail take "char** errptr" last. On entry
       *errptr is NULL or a malloc()ed message. On success it is left
       unchanged; on failure the old message is freed and *errptr is set to
       a malloc()ed message ("Corruption: ...", "Invalid argument: ...",
       "IO error: ...", "Not implemented: ...", "NotFound: ..." for a
       missing keyspace). Free it with leveldb_free().
   (4) Booleans are uint8_t (0 false, anything else true).
   (5) Pointer arguments must be non-NULL unless said otherwise.

   Differences from LevelDB, all documented in README.md ("C API"):
   - A custom comparator orders every key, as in LevelDB; the store records
     its name and refuses another. Its destructor runs once no options
     object or open store holds it any more (LevelDB: at
     leveldb_comparator_destroy). Keys it calls equal must have equal
     bytes.
   - A custom filter policy's callbacks build each new table's filter and
     answer lookups, as in LevelDB; a table built under another policy name
     is read unfiltered. leveldb_filterpolicy_create_bloom(n) selects the
     engine's own Bloom filter with n bits per key. Without a policy the
     engine's default Bloom filter (10 bits) is used (LevelDB uses none).
     A policy's destructor runs once no options object or open store holds
     it any more (LevelDB: at leveldb_filterpolicy_destroy).
   - leveldb_cache_create_lru(capacity): one block cache shared by every
     store opened with it (a CLOCK cache, not an LRU); open stores keep it
     alive after leveldb_cache_destroy.
   - leveldb_snappy_compression selects LZ4.
   - paranoid_checks and verify_checksums are no-ops: checksums are always
     verified.
   - Extensions (RocksDB's DeleteRange and column families): range
     deletes and keyspaces, in their own sections below.
   - leveldb_repair_db rebuilds the MANIFEST from the tables that survive
     (salvaging the intact blocks of damaged ones) and prints what it
     recovered and lost to standard error. */

#ifndef THICKET_C_H_
#define THICKET_C_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef LEVELDB_EXPORT
#define LEVELDB_EXPORT
#endif

/* Exported types */

typedef struct leveldb_t leveldb_t;
typedef struct leveldb_cache_t leveldb_cache_t;
typedef struct leveldb_comparator_t leveldb_comparator_t;
typedef struct leveldb_env_t leveldb_env_t;
typedef struct leveldb_filelock_t leveldb_filelock_t;
typedef struct leveldb_filterpolicy_t leveldb_filterpolicy_t;
typedef struct leveldb_iterator_t leveldb_iterator_t;
typedef struct leveldb_keyspace_t leveldb_keyspace_t;
typedef struct leveldb_logger_t leveldb_logger_t;
typedef struct leveldb_options_t leveldb_options_t;
typedef struct leveldb_randomfile_t leveldb_randomfile_t;
typedef struct leveldb_readoptions_t leveldb_readoptions_t;
typedef struct leveldb_seqfile_t leveldb_seqfile_t;
typedef struct leveldb_snapshot_t leveldb_snapshot_t;
typedef struct leveldb_writablefile_t leveldb_writablefile_t;
typedef struct leveldb_writebatch_t leveldb_writebatch_t;
typedef struct leveldb_writeoptions_t leveldb_writeoptions_t;

/* DB operations */

/* Opens the store in directory `name`; NULL and *errptr set on failure. */
LEVELDB_EXPORT leveldb_t* leveldb_open(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* Closes the store. Release its iterators and snapshots first. */
LEVELDB_EXPORT void leveldb_close(leveldb_t* db);

LEVELDB_EXPORT void leveldb_put(leveldb_t* db,
                                const leveldb_writeoptions_t* options,
                                const char* key, size_t keylen, const char* val,
                                size_t vallen, char** errptr);

LEVELDB_EXPORT void leveldb_delete(leveldb_t* db,
                                   const leveldb_writeoptions_t* options,
                                   const char* key, size_t keylen,
                                   char** errptr);

/* Extension (RocksDB's DeleteRange): deletes every key in [start, end)
   with one range tombstone, however many keys the range holds. A store
   with a custom comparator returns "Invalid argument". */
LEVELDB_EXPORT void leveldb_delete_range(leveldb_t* db,
                                         const leveldb_writeoptions_t* options,
                                         const char* start_key,
                                         size_t start_len, const char* end_key,
                                         size_t end_len, char** errptr);

/* Applies the batch atomically; the batch stays usable. */
LEVELDB_EXPORT void leveldb_write(leveldb_t* db,
                                  const leveldb_writeoptions_t* options,
                                  leveldb_writebatch_t* batch, char** errptr);

/* Returns NULL if not found. A malloc()ed array otherwise (free it with
   leveldb_free()). Stores the length of the array in *vallen. */
LEVELDB_EXPORT char* leveldb_get(leveldb_t* db,
                                 const leveldb_readoptions_t* options,
                                 const char* key, size_t keylen, size_t* vallen,
                                 char** errptr);

LEVELDB_EXPORT leveldb_iterator_t* leveldb_create_iterator(
    leveldb_t* db, const leveldb_readoptions_t* options);

LEVELDB_EXPORT const leveldb_snapshot_t* leveldb_create_snapshot(leveldb_t* db);

LEVELDB_EXPORT void leveldb_release_snapshot(
    leveldb_t* db, const leveldb_snapshot_t* snapshot);

/* Returns NULL if property name is unknown. Else returns a pointer to a
   malloc()-ed null-terminated value. Known: "leveldb.stats",
   "leveldb.num-files-at-level<N>" (N < 7), "leveldb.sstables",
   "leveldb.approximate-memory-usage". */
LEVELDB_EXPORT char* leveldb_property_value(leveldb_t* db,
                                            const char* propname);

/* Approximate table bytes of each range [start, limit); memtables are not
   counted. */
LEVELDB_EXPORT void leveldb_approximate_sizes(
    leveldb_t* db, int num_ranges, const char* const* range_start_key,
    const size_t* range_start_key_len, const char* const* range_limit_key,
    const size_t* range_limit_key_len, uint64_t* sizes);

/* Compacts [start_key, limit_key]; a NULL key is unbounded on its side. */
LEVELDB_EXPORT void leveldb_compact_range(leveldb_t* db, const char* start_key,
                                          size_t start_key_len,
                                          const char* limit_key,
                                          size_t limit_key_len);

/* Management operations */

/* Deletes the store's files (not foreign files) and the directory when it
   is left empty. A missing store is not an error; an open one is. */
LEVELDB_EXPORT void leveldb_destroy_db(const leveldb_options_t* options,
                                       const char* name, char** errptr);

/* Rebuilds the MANIFEST from the tables that survive in the segment files;
   the entries of a damaged table's intact blocks are salvaged into a new
   table. Prints what was recovered and lost to standard error. */
LEVELDB_EXPORT void leveldb_repair_db(const leveldb_options_t* options,
                                      const char* name, char** errptr);

/* Iterator: key and value pointers stay valid until the iterator moves or
   is destroyed. */

LEVELDB_EXPORT void leveldb_iter_destroy(leveldb_iterator_t*);
LEVELDB_EXPORT uint8_t leveldb_iter_valid(const leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_first(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek_to_last(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_seek(leveldb_iterator_t*, const char* k,
                                      size_t klen);
LEVELDB_EXPORT void leveldb_iter_next(leveldb_iterator_t*);
LEVELDB_EXPORT void leveldb_iter_prev(leveldb_iterator_t*);
LEVELDB_EXPORT const char* leveldb_iter_key(const leveldb_iterator_t*,
                                            size_t* klen);
LEVELDB_EXPORT const char* leveldb_iter_value(const leveldb_iterator_t*,
                                              size_t* vlen);
LEVELDB_EXPORT void leveldb_iter_get_error(const leveldb_iterator_t*,
                                           char** errptr);

/* Write batch */

LEVELDB_EXPORT leveldb_writebatch_t* leveldb_writebatch_create(void);
LEVELDB_EXPORT void leveldb_writebatch_destroy(leveldb_writebatch_t*);
LEVELDB_EXPORT void leveldb_writebatch_clear(leveldb_writebatch_t*);
LEVELDB_EXPORT void leveldb_writebatch_put(leveldb_writebatch_t*,
                                           const char* key, size_t klen,
                                           const char* val, size_t vlen);
LEVELDB_EXPORT void leveldb_writebatch_delete(leveldb_writebatch_t*,
                                              const char* key, size_t klen);
/* Extension: deletes every key in [start, end) when the batch is written. */
LEVELDB_EXPORT void leveldb_writebatch_delete_range(leveldb_writebatch_t*,
                                                    const char* start_key,
                                                    size_t start_len,
                                                    const char* end_key,
                                                    size_t end_len);
/* Range deletions are passed over (LevelDB's batches hold none); see
   leveldb_writebatch_iterate_ranges. */
LEVELDB_EXPORT void leveldb_writebatch_iterate(
    const leveldb_writebatch_t*, void* state,
    void (*put)(void*, const char* k, size_t klen, const char* v, size_t vlen),
    void (*deleted)(void*, const char* k, size_t klen));
/* Extension: as leveldb_writebatch_iterate, with deleted_range (may be
   NULL) called for every range deletion, all in batch order. */
LEVELDB_EXPORT void leveldb_writebatch_iterate_ranges(
    const leveldb_writebatch_t*, void* state,
    void (*put)(void*, const char* k, size_t klen, const char* v, size_t vlen),
    void (*deleted)(void*, const char* k, size_t klen),
    void (*deleted_range)(void*, const char* start, size_t start_len,
                          const char* end, size_t end_len));
LEVELDB_EXPORT void leveldb_writebatch_append(
    leveldb_writebatch_t* destination, const leveldb_writebatch_t* source);

/* Keyspaces (extension; RocksDB's column families): independent ordered
   namespaces of one store, each with its own options, sharing the log, so
   a batch across keyspaces is atomic, also across a crash. Every store has
   the keyspace "default", which the calls without a keyspace use.
   A keyspace that does not exist (never created, or dropped) gives
   "NotFound: no such keyspace: ...". */

/* Creates keyspace `name` (1 to 255 bytes of UTF-8) with the keyspace-level
   settings of `options` (compression, block size, table size, write
   buffer, filter policy); store-wide ones (comparator, cache) stay the
   store's. Durable once it returns. Returns a handle, or NULL and *errptr
   ("Invalid argument" when the name is taken or bad). */
LEVELDB_EXPORT leveldb_keyspace_t* leveldb_create_keyspace(
    leveldb_t* db, const leveldb_options_t* options, const char* name,
    char** errptr);

/* A handle on the existing keyspace `name` ("default" included), or NULL
   and *errptr. */
LEVELDB_EXPORT leveldb_keyspace_t* leveldb_open_keyspace(leveldb_t* db,
                                                         const char* name,
                                                         char** errptr);

/* Drops the keyspace the handle names and all its data, durably (its space
   is released). The handle must still be destroyed; calls through it then
   fail with "NotFound". The default keyspace cannot be dropped ("Invalid
   argument"). */
LEVELDB_EXPORT void leveldb_drop_keyspace(leveldb_t* db,
                                          leveldb_keyspace_t* keyspace,
                                          char** errptr);

/* Releases a handle (the keyspace stays). After leveldb_close, calls
   through a handle fail; destroy it still. */
LEVELDB_EXPORT void leveldb_keyspace_handle_destroy(leveldb_keyspace_t*);

/* The handle's keyspace name: malloc()ed, NUL-terminated, its length in
   *name_len (may be NULL). Free it with leveldb_free(). */
LEVELDB_EXPORT char* leveldb_keyspace_name(const leveldb_keyspace_t*,
                                           size_t* name_len);

/* The keyspace names of the store in directory `name`, "default" first,
   then in order of creation: a malloc()ed array of *count malloc()ed
   strings (free it with leveldb_list_keyspaces_destroy), or NULL and
   *errptr. The store is opened read-only, so it may be open elsewhere. */
LEVELDB_EXPORT char** leveldb_list_keyspaces(const leveldb_options_t* options,
                                             const char* name, size_t* count,
                                             char** errptr);
LEVELDB_EXPORT void leveldb_list_keyspaces_destroy(char** list, size_t count);

/* The data calls in one keyspace: as leveldb_put, leveldb_delete,
   leveldb_delete_range, leveldb_get, leveldb_create_iterator and
   leveldb_compact_range. Read options' snapshots apply to every keyspace. */
LEVELDB_EXPORT void leveldb_put_in(leveldb_t* db,
                                   const leveldb_writeoptions_t* options,
                                   leveldb_keyspace_t* keyspace,
                                   const char* key, size_t keylen,
                                   const char* val, size_t vallen,
                                   char** errptr);
LEVELDB_EXPORT void leveldb_delete_in(leveldb_t* db,
                                      const leveldb_writeoptions_t* options,
                                      leveldb_keyspace_t* keyspace,
                                      const char* key, size_t keylen,
                                      char** errptr);
LEVELDB_EXPORT void leveldb_delete_range_in(
    leveldb_t* db, const leveldb_writeoptions_t* options,
    leveldb_keyspace_t* keyspace, const char* start_key, size_t start_len,
    const char* end_key, size_t end_len, char** errptr);
LEVELDB_EXPORT char* leveldb_get_in(leveldb_t* db,
                                    const leveldb_readoptions_t* options,
                                    leveldb_keyspace_t* keyspace,
                                    const char* key, size_t keylen,
                                    size_t* vallen, char** errptr);
/* An error (dropped keyspace) is reported by leveldb_iter_get_error. */
LEVELDB_EXPORT leveldb_iterator_t* leveldb_create_iterator_in(
    leveldb_t* db, const leveldb_readoptions_t* options,
    leveldb_keyspace_t* keyspace);
LEVELDB_EXPORT void leveldb_compact_range_in(leveldb_t* db,
                                             leveldb_keyspace_t* keyspace,
                                             const char* start_key,
                                             size_t start_key_len,
                                             const char* limit_key,
                                             size_t limit_key_len);

/* Batch updates in one keyspace; one batch may mix keyspaces and is
   written atomically. leveldb_writebatch_iterate and _iterate_ranges pass
   over updates of keyspaces other than "default";
   leveldb_writebatch_iterate_in reports them all. An update for a keyspace
   dropped before the batch is written is discarded. */
LEVELDB_EXPORT void leveldb_writebatch_put_in(leveldb_writebatch_t*,
                                              leveldb_keyspace_t* keyspace,
                                              const char* key, size_t klen,
                                              const char* val, size_t vlen);
LEVELDB_EXPORT void leveldb_writebatch_delete_in(leveldb_writebatch_t*,
                                                 leveldb_keyspace_t* keyspace,
                                                 const char* key, size_t klen);
LEVELDB_EXPORT void leveldb_writebatch_delete_range_in(
    leveldb_writebatch_t*, leveldb_keyspace_t* keyspace, const char* start_key,
    size_t start_len, const char* end_key, size_t end_len);
/* Calls put, deleted or deleted_range (each may be NULL) for every update
   of every keyspace, in batch order, with the update's keyspace name
   (NUL-terminated; "default" for the default keyspace) first. */
LEVELDB_EXPORT void leveldb_writebatch_iterate_in(
    const leveldb_writebatch_t*, void* state,
    void (*put)(void*, const char* keyspace, const char* k, size_t klen,
                const char* v, size_t vlen),
    void (*deleted)(void*, const char* keyspace, const char* k, size_t klen),
    void (*deleted_range)(void*, const char* keyspace, const char* start,
                          size_t start_len, const char* end, size_t end_len));

/* Options */

LEVELDB_EXPORT leveldb_options_t* leveldb_options_create(void);
LEVELDB_EXPORT void leveldb_options_destroy(leveldb_options_t*);
LEVELDB_EXPORT void leveldb_options_set_comparator(leveldb_options_t*,
                                                   leveldb_comparator_t*);
LEVELDB_EXPORT void leveldb_options_set_filter_policy(leveldb_options_t*,
                                                      leveldb_filterpolicy_t*);
LEVELDB_EXPORT void leveldb_options_set_create_if_missing(leveldb_options_t*,
                                                          uint8_t);
LEVELDB_EXPORT void leveldb_options_set_error_if_exists(leveldb_options_t*,
                                                        uint8_t);
LEVELDB_EXPORT void leveldb_options_set_paranoid_checks(leveldb_options_t*,
                                                        uint8_t);
LEVELDB_EXPORT void leveldb_options_set_env(leveldb_options_t*, leveldb_env_t*);
LEVELDB_EXPORT void leveldb_options_set_info_log(leveldb_options_t*,
                                                 leveldb_logger_t*);
LEVELDB_EXPORT void leveldb_options_set_write_buffer_size(leveldb_options_t*,
                                                          size_t);
LEVELDB_EXPORT void leveldb_options_set_max_open_files(leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_cache(leveldb_options_t*,
                                              leveldb_cache_t*);
LEVELDB_EXPORT void leveldb_options_set_block_size(leveldb_options_t*, size_t);
LEVELDB_EXPORT void leveldb_options_set_block_restart_interval(
    leveldb_options_t*, int);
LEVELDB_EXPORT void leveldb_options_set_max_file_size(leveldb_options_t*,
                                                      size_t);

enum { leveldb_no_compression = 0, leveldb_snappy_compression = 1 };
LEVELDB_EXPORT void leveldb_options_set_compression(leveldb_options_t*, int);

/* Comparator */

LEVELDB_EXPORT leveldb_comparator_t* leveldb_comparator_create(
    void* state, void (*destructor)(void*),
    int (*compare)(void*, const char* a, size_t alen, const char* b,
                   size_t blen),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_comparator_destroy(leveldb_comparator_t*);

/* Filter policy */

LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create(
    void* state, void (*destructor)(void*),
    char* (*create_filter)(void*, const char* const* key_array,
                           const size_t* key_length_array, int num_keys,
                           size_t* filter_length),
    uint8_t (*key_may_match)(void*, const char* key, size_t length,
                             const char* filter, size_t filter_length),
    const char* (*name)(void*));
LEVELDB_EXPORT void leveldb_filterpolicy_destroy(leveldb_filterpolicy_t*);

LEVELDB_EXPORT leveldb_filterpolicy_t* leveldb_filterpolicy_create_bloom(
    int bits_per_key);

/* Read options */

LEVELDB_EXPORT leveldb_readoptions_t* leveldb_readoptions_create(void);
LEVELDB_EXPORT void leveldb_readoptions_destroy(leveldb_readoptions_t*);
LEVELDB_EXPORT void leveldb_readoptions_set_verify_checksums(
    leveldb_readoptions_t*, uint8_t);
LEVELDB_EXPORT void leveldb_readoptions_set_fill_cache(leveldb_readoptions_t*,
                                                       uint8_t);
LEVELDB_EXPORT void leveldb_readoptions_set_snapshot(leveldb_readoptions_t*,
                                                     const leveldb_snapshot_t*);

/* Write options */

LEVELDB_EXPORT leveldb_writeoptions_t* leveldb_writeoptions_create(void);
LEVELDB_EXPORT void leveldb_writeoptions_destroy(leveldb_writeoptions_t*);
LEVELDB_EXPORT void leveldb_writeoptions_set_sync(leveldb_writeoptions_t*,
                                                  uint8_t);

/* Cache */

LEVELDB_EXPORT leveldb_cache_t* leveldb_cache_create_lru(size_t capacity);
LEVELDB_EXPORT void leveldb_cache_destroy(leveldb_cache_t* cache);

/* Env */

LEVELDB_EXPORT leveldb_env_t* leveldb_create_default_env(void);
LEVELDB_EXPORT void leveldb_env_destroy(leveldb_env_t*);

/* If not NULL, the returned buffer must be released using leveldb_free(). */
LEVELDB_EXPORT char* leveldb_env_get_test_directory(leveldb_env_t*);

/* Utility */

/* Calls free(ptr). REQUIRES: ptr was malloc()-ed and returned by one of the
   routines in this file. */
LEVELDB_EXPORT void leveldb_free(void* ptr);

/* The LevelDB API version implemented: 1.23. */
LEVELDB_EXPORT int leveldb_major_version(void);
LEVELDB_EXPORT int leveldb_minor_version(void);

#ifdef __cplusplus
} /* end extern "C" */
#endif

#endif /* THICKET_C_H_ */
