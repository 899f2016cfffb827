#include "skydb/data_dir_layout.h"

namespace skydb {

DataDirLayout DataDirLayout::For(const std::string& root) {
  std::string base = root;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const std::string run = base + "/run";
  return {base,
          base + "/pgdata",
          run,
          base + "/runtime",
          base + "/skydb.lock",
          run + "/skydb.status.json",
          run + "/skydb.sock",
          run + "/.s.PGSQL.5432",
          run + "/app.env",
          run + "/app.json",
          run + "/archive-failure.txt"};
}

std::string DataDirLayout::InRun(const std::string& name) const {
  return !name.empty() && name.front() == '/' ? name : run + "/" + name;
}

}  // namespace skydb
