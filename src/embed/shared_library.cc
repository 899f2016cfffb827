// libskydb.so's own translation unit: the library is the internal archives, whole
// (src/embed/CMakeLists.txt), with only the public API exported (src/embed/libskydb.map).
#include "skydb/embedded.h"
