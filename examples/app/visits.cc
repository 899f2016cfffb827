#include "visits.h"

#include <pqxx/pqxx>

namespace app {

Visits::~Visits() = default;

bool Visits::Open(const std::string& database_url, std::string& error) {
  try {
    conn_ = std::make_unique<pqxx::connection>(database_url);
    pqxx::work tx(*conn_);
    tx.exec0(
        "CREATE TABLE IF NOT EXISTS visits (id bigserial PRIMARY KEY, at timestamptz NOT NULL "
        "DEFAULT now(), visitor_count integer NOT NULL)");
    tx.commit();
    return true;
  } catch (const std::exception& e) {
    error = e.what();
    return false;
  }
}

long Visits::Record(int count, std::string& error) {
  try {
    pqxx::work tx(*conn_);
    tx.exec_params0("INSERT INTO visits (visitor_count) VALUES ($1)", count);
    long rows = tx.exec1("SELECT count(*) FROM visits")[0].as<long>();
    tx.commit();
    return rows;
  } catch (const std::exception& e) {
    error = e.what();
    return -1;
  }
}

long Visits::Count(std::string& error) {
  try {
    pqxx::read_transaction tx(*conn_);
    return tx.exec1("SELECT count(*) FROM visits")[0].as<long>();
  } catch (const std::exception& e) {
    error = e.what();
    return -1;
  }
}

}  // namespace app
