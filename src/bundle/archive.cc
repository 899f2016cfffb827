#include "bundle/archive.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "bundle/sha256.h"

namespace skydb::bundle {
namespace {

using WriterPtr = std::unique_ptr<struct archive, int (*)(struct archive*)>;
using EntryPtr = std::unique_ptr<struct archive_entry, void (*)(struct archive_entry*)>;

// The trailer: a zstd skippable frame (magic 0x184D2A5B, little-endian length) whose payload is
// a tag and the SHA-256 of everything before the frame.
constexpr char kTrailerMagic[4] = {'\x5b', '\x2a', '\x4d', '\x18'};
constexpr char kTrailerTag[8] = {'S', 'K', 'Y', 'D', 'B', 'S', 'H', 'A'};
constexpr size_t kTrailerPayload = sizeof kTrailerTag + 32;
constexpr size_t kTrailerSize = 8 + kTrailerPayload;

std::string Trailer(std::string_view body) {
  std::string t(kTrailerMagic, sizeof kTrailerMagic);
  uint32_t length = kTrailerPayload;
  for (int i = 0; i < 4; ++i) t.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  t.append(kTrailerTag, sizeof kTrailerTag);
  t += Sha256Raw(body);
  return t;
}

// No PostgreSQL file comes near this; a larger claim is a damaged or hostile header.
constexpr la_int64_t kMaxMemberSize = la_int64_t{1} << 32;

Error ArchiveError(struct archive* a, const std::string& what) {
  const char* text = archive_error_string(a);
  return Error::Io(what + ": " + (text != nullptr ? text : "unknown libarchive error"));
}

Status WriteOne(struct archive* a, const ArchiveEntry& e, const std::string& data,
                const std::string& path) {
  EntryPtr entry(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(entry.get(), e.name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), e.mode);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(data.size()));
  archive_entry_set_mtime(entry.get(), 0, 0);  // fixed metadata: byte-identical re-stages
  archive_entry_set_uid(entry.get(), 0);
  archive_entry_set_gid(entry.get(), 0);
  if (archive_write_header(a, entry.get()) != ARCHIVE_OK) {
    return ArchiveError(a, path + ": cannot write the header of " + e.name);
  }
  if (!data.empty() &&
      archive_write_data(a, data.data(), data.size()) != static_cast<la_ssize_t>(data.size())) {
    return ArchiveError(a, path + ": cannot write " + e.name);
  }
  return Ok();
}

}  // namespace

Status WriteArchive(const std::string& path, const std::vector<ArchiveEntry>& entries,
                    int zstd_level, const FileSystem& fs,
                    const std::function<void(size_t written)>& written) {
  WriterPtr a(archive_write_new(), archive_write_free);
  std::string level = std::to_string(zstd_level);
  if (archive_write_set_format_ustar(a.get()) != ARCHIVE_OK ||
      archive_write_add_filter_zstd(a.get()) != ARCHIVE_OK ||
      archive_write_set_filter_option(a.get(), "zstd", "compression-level", level.c_str()) !=
          ARCHIVE_OK) {
    return ArchiveError(a.get(), path + ": cannot set up a zstd-compressed tar");
  }
  if (archive_write_open_filename(a.get(), path.c_str()) != ARCHIVE_OK) {
    return ArchiveError(a.get(), "cannot create " + path);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const ArchiveEntry& e = entries[i];
    std::string data = e.contents;
    if (!e.source_file.empty()) {
      SKYDB_ASSIGN_OR_RETURN(data, fs.ReadFile(e.source_file));
    }
    SKYDB_RETURN_IF_ERROR(WriteOne(a.get(), e, data, path));
    if (written) written(i + 1);
  }
  if (archive_write_close(a.get()) != ARCHIVE_OK) {
    return ArchiveError(a.get(), "cannot finish " + path);
  }
  SKYDB_ASSIGN_OR_RETURN(std::string body, fs.ReadFile(path));
  std::ofstream file(path, std::ios::binary | std::ios::app);
  file << Trailer(body);
  file.close();
  if (!file) return Error::Io("cannot append the checksum to " + path);
  return Ok();
}

Status ReadArchive(std::string_view bytes, const std::string& name, size_t limit,
                   const std::function<Status(const ArchiveMember&)>& visit) {
  if (bytes.size() < kTrailerSize ||
      bytes.substr(bytes.size() - kTrailerSize, 12) != Trailer("").substr(0, 12)) {
    return Error::InvalidArgument(name +
                                  " has no skydb checksum at its end; it is not a "
                                  "skydb bundle, or it was cut short");
  }
  std::string_view body = bytes.substr(0, bytes.size() - kTrailerSize);
  if (Trailer(body) != bytes.substr(body.size())) {
    return Error::InvalidArgument(name +
                                  " is damaged: its SHA-256 does not match the checksum "
                                  "it was written with; stage or copy it again");
  }
  bytes = body;
  WriterPtr a(archive_read_new(), archive_read_free);
  archive_read_support_filter_zstd(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    return ArchiveError(a.get(), name + " is not a zstd-compressed tar archive");
  }
  std::string data;
  for (size_t count = 0; limit == 0 || count < limit; ++count) {
    struct archive_entry* entry = nullptr;
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK) return ArchiveError(a.get(), name + " is damaged");
    ArchiveMember member;
    member.name = archive_entry_pathname(entry) != nullptr ? archive_entry_pathname(entry) : "";
    member.regular = archive_entry_filetype(entry) == AE_IFREG;
    member.mode = archive_entry_perm(entry);
    data.clear();
    if (member.regular) {
      la_int64_t size = archive_entry_size(entry);
      if (size < 0 || size > kMaxMemberSize) {
        return Error::InvalidArgument(name + " is damaged: member " + member.name + " claims " +
                                      std::to_string(size) + " bytes");
      }
      data.resize(static_cast<size_t>(size));
      size_t got = 0;
      while (got < data.size()) {
        la_ssize_t n = archive_read_data(a.get(), data.data() + got, data.size() - got);
        if (n <= 0)
          return ArchiveError(a.get(), name + " is damaged (reading " + member.name + ")");
        got += static_cast<size_t>(n);
      }
    }
    member.data = data;
    SKYDB_RETURN_IF_ERROR(visit(member));
  }
  return Ok();
}

}  // namespace skydb::bundle
