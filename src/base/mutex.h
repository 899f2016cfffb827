// skydb::Mutex, MutexLock and CondVar now live in include/skydb/mutex.h, because public headers
// (skydb/metrics.h, skydb/notify.h) hold annotated state too. This forwarder keeps the existing
// `#include "base/mutex.h"` lines building; new code includes "skydb/mutex.h".
#pragma once

#include "skydb/mutex.h"
