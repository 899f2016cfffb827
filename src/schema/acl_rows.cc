// The store's ACL users as rows (schema/acl_rows.h).
#include "schema/acl_rows.h"

#include <openssl/evp.h>

#include <array>
#include <optional>

#include "base/strings.h"

namespace skydb::schema {

const char kAclTablesSql[] =
    "DO $m$ BEGIN"
    " CREATE TABLE IF NOT EXISTS skydb_acl_users (name text PRIMARY KEY, rules text NOT NULL);"
    " CREATE TABLE IF NOT EXISTS skydb_acl_generation ("
    "  one boolean PRIMARY KEY DEFAULT true CHECK (one), generation bigint NOT NULL);"
    " INSERT INTO skydb_acl_generation VALUES (true, 0) ON CONFLICT DO NOTHING;"
    " END $m$";

namespace {

constexpr char kBump[] = "UPDATE skydb_acl_generation SET generation = generation + 1";

Status PutRow(pg::Connection& tx, const std::string& name, const std::string& rules) {
  return tx.Run(
      "INSERT INTO skydb_acl_users (name, rules) VALUES ($1, $2)"
      " ON CONFLICT (name) DO UPDATE SET rules = excluded.rules",
      {name, rules});
}

Status DeleteRow(pg::Connection& tx, const std::string& name) {
  return tx.Run("DELETE FROM skydb_acl_users WHERE name = $1", {name});
}

std::string Sha256Hex(const std::string& text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest.data(), &length, EVP_sha256(), nullptr);
  return HexOf(std::string_view(reinterpret_cast<const char*>(digest.data()), length));
}

class PgAclStorage final : public AclStorage {
 public:
  PgAclStorage(std::string conninfo, bool named_statements)
      : conninfo_(std::move(conninfo)), named_statements_(named_statements) {}

  Status Update(const std::string& name, const Edit& edit) override {
    return Use([&](pg::Connection& conn) {
      return conn.InTransaction([&](pg::Connection& tx) -> Status {
        SKYDB_ASSIGN_OR_RETURN(
            auto held,
            tx.Exec("SELECT rules FROM skydb_acl_users WHERE name = $1 FOR UPDATE", {name}));
        std::optional<std::string> rules;
        if (held.rows() > 0) rules = held.Get(0, 0);
        SKYDB_ASSIGN_OR_RETURN(std::optional<std::string> next, edit(rules));
        if (!next && !rules) return Ok();
        if (next) {
          SKYDB_RETURN_IF_ERROR(PutRow(tx, name, *next));
        } else {
          SKYDB_RETURN_IF_ERROR(DeleteRow(tx, name));
        }
        return tx.Run(kBump);
      });
    });
  }

  Status ReplaceAll(const std::vector<Row>& rows) override {
    return Use([&](pg::Connection& conn) {
      return conn.InTransaction([&](pg::Connection& tx) -> Status {
        SKYDB_RETURN_IF_ERROR(tx.Run("DELETE FROM skydb_acl_users"));
        for (const auto& row : rows) SKYDB_RETURN_IF_ERROR(PutRow(tx, row.name, row.rules));
        return tx.Run(kBump);
      });
    });
  }

  Result<std::vector<Row>> Load() override {
    std::vector<Row> rows;
    SKYDB_RETURN_IF_ERROR(Use([&](pg::Connection& conn) -> Status {
      SKYDB_ASSIGN_OR_RETURN(auto result,
                             conn.Exec("SELECT name, rules FROM skydb_acl_users ORDER BY name"));
      for (int i = 0; i < result.rows(); ++i) rows.push_back({result.Get(i, 0), result.Get(i, 1)});
      return Ok();
    }));
    return rows;
  }

  Result<int64_t> Generation() override {
    int64_t generation = 0;
    SKYDB_RETURN_IF_ERROR(Use([&](pg::Connection& conn) -> Status {
      SKYDB_ASSIGN_OR_RETURN(auto result, conn.Exec("SELECT generation FROM skydb_acl_generation"));
      if (result.rows() != 1) return Error::Internal("skydb_acl_generation has no row");
      generation = std::stoll(result.Get(0, 0));
      return Ok();
    }));
    return generation;
  }

 private:
  // Runs `body` on the connection, opened first if need be; closed after a failure that broke it.
  Status Use(const std::function<Status(pg::Connection&)>& body) {
    if (conn_ && !conn_->Healthy()) conn_.reset();
    if (!conn_) {
      pg::ConnectOptions options;
      options.read_write = true;
      options.name = "acl";
      options.named_statements = named_statements_;
      SKYDB_ASSIGN_OR_RETURN(auto opened, pg::Connection::Open(conninfo_, options));
      conn_.emplace(std::move(opened));
    }
    Status status = body(*conn_);
    if (!status.ok() && !conn_->Healthy()) conn_.reset();
    return status;
  }

  std::string conninfo_;
  bool named_statements_;
  std::optional<pg::Connection> conn_;
};

}  // namespace

std::unique_ptr<AclStorage> NewPgAclStorage(std::string conninfo, bool named_statements) {
  return std::make_unique<PgAclStorage>(std::move(conninfo), named_statements);
}

std::string AppStoreUserRules(const std::string& app, const std::string& password) {
  return "on #" + Sha256Hex(password) + " ~" + app + ":* resetchannels &" + app +
         ":* +@all -@dangerous +info";
}

Status PutAclUser(pg::Connection& conn, const std::string& name, const std::string& rules) {
  SKYDB_RETURN_IF_ERROR(conn.Run(kAclTablesSql));
  return conn.InTransaction([&](pg::Connection& tx) -> Status {
    SKYDB_RETURN_IF_ERROR(PutRow(tx, name, rules));
    return tx.Run(kBump);
  });
}

Status DeleteAclUser(pg::Connection& conn, const std::string& name) {
  SKYDB_RETURN_IF_ERROR(conn.Run(kAclTablesSql));
  return conn.InTransaction([&](pg::Connection& tx) -> Status {
    SKYDB_RETURN_IF_ERROR(DeleteRow(tx, name));
    return tx.Run(kBump);
  });
}

}  // namespace skydb::schema
