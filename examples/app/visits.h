// The app's own table, in its own database (DATABASE_URL from skydb's contract), through
// libpqxx: one row per visit. libpqxx throws; this adapter turns that into false + error.
// Thread-safety: one connection, one thread.
#pragma once

#include <memory>
#include <pqxx/connection>
#include <string>

namespace app {

class Visits {
 public:
  ~Visits();
  // Connects and creates the table when missing.
  bool Open(const std::string& database_url, std::string& error);
  // Records a visit of the visitor's `count`-th request; the table's row count after it, or -1.
  long Record(int count, std::string& error);
  long Count(std::string& error);

 private:
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace app
