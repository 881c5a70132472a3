/* LevelDB compatibility header: programs that include <leveldb/c.h> get
   ThicketDB's implementation of LevelDB's C API (see <thicket/c.h>) and
   link with -lthicket instead of -lleveldb. */

#ifndef STORAGE_LEVELDB_INCLUDE_C_H_
#define STORAGE_LEVELDB_INCLUDE_C_H_

#include "../thicket/c.h"

#endif /* STORAGE_LEVELDB_INCLUDE_C_H_ */
