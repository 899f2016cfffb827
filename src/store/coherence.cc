#include "store/coherence.h"

namespace skydb::store {

void ReadRows(Loader& loader, Fetch fetch, std::function<void(Result<Fetch>)> then) {
  std::vector<std::string> keys = fetch.keys;
  loader.Read(std::move(keys), [fetch = std::move(fetch),
                                then = std::move(then)](Result<std::vector<Row>> rows) mutable {
    if (!rows.ok()) return then(std::move(rows).error());
    for (size_t i = 0; i < fetch.keys.size(); ++i) {
      fetch.rows.rows.emplace_back(fetch.keys[i], std::move((*rows)[i]));
    }
    then(std::move(fetch));
  });
}

}  // namespace skydb::store
