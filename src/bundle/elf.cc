#include "bundle/elf.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "base/strings.h"

namespace skydb::bundle {
namespace {

// Bounds-checked reads from the file image.
class Image {
 public:
  explicit Image(std::string_view bytes) : bytes_(bytes) {}

  template <typename T>
  std::optional<T> At(uint64_t offset) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T)) return std::nullopt;
    T value;
    std::memcpy(&value, bytes_.data() + offset, sizeof(T));
    return value;
  }
  // A NUL-terminated string starting at `offset`.
  std::optional<std::string> String(uint64_t offset) const {
    if (offset >= bytes_.size()) return std::nullopt;
    size_t end = bytes_.find('\0', offset);
    if (end == std::string_view::npos) return std::nullopt;
    return std::string(bytes_.substr(offset, end - offset));
  }

 private:
  std::string_view bytes_;
};

std::string ArchName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86_64";
    case EM_AARCH64:
      return "aarch64";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390x";
    case EM_RISCV:
      return "riscv64";
    default:
      return "machine-" + std::to_string(machine);
  }
}

struct Loaded {
  std::vector<Elf64_Phdr> loads;
  std::optional<Elf64_Phdr> dynamic;
};

// A virtual address in a PT_LOAD segment → its file offset.
std::optional<uint64_t> OffsetOf(const Loaded& l, uint64_t vaddr) {
  for (const auto& p : l.loads) {
    if (vaddr >= p.p_vaddr && vaddr - p.p_vaddr < p.p_filesz) return vaddr - p.p_vaddr + p.p_offset;
  }
  return std::nullopt;
}

struct DynamicTable {
  std::vector<uint64_t> needed;  // string-table offsets
  std::optional<uint64_t> soname, runpath, rpath, strtab, verneed;
  uint64_t verneed_count = 0;
};

std::optional<DynamicTable> ReadDynamic(const Image& image, const Elf64_Phdr& dyn) {
  DynamicTable t;
  for (uint64_t off = dyn.p_offset; off + sizeof(Elf64_Dyn) <= dyn.p_offset + dyn.p_filesz;
       off += sizeof(Elf64_Dyn)) {
    auto d = image.At<Elf64_Dyn>(off);
    if (!d) return std::nullopt;
    if (d->d_tag == DT_NULL) break;
    uint64_t v = d->d_un.d_val;
    switch (d->d_tag) {
      case DT_NEEDED:
        t.needed.push_back(v);
        break;
      case DT_SONAME:
        t.soname = v;
        break;
      case DT_RUNPATH:
        t.runpath = v;
        break;
      case DT_RPATH:
        t.rpath = v;
        break;
      case DT_STRTAB:
        t.strtab = v;
        break;
      case DT_VERNEED:
        t.verneed = v;
        break;
      case DT_VERNEEDNUM:
        t.verneed_count = v;
        break;
      default:
        break;
    }
  }
  return t;
}

// Every version name in the version-needs table (Elf64_Verneed → Elf64_Vernaux chains).
std::optional<std::vector<std::string>> ReadVersionNeeds(const Image& image, uint64_t offset,
                                                         uint64_t count, uint64_t strtab) {
  std::vector<std::string> names;
  for (uint64_t i = 0; i < count && i < 4096; ++i) {
    auto need = image.At<Elf64_Verneed>(offset);
    if (!need) return std::nullopt;
    uint64_t aux = offset + need->vn_aux;
    for (uint16_t j = 0; j < need->vn_cnt; ++j) {
      auto a = image.At<Elf64_Vernaux>(aux);
      if (!a) return std::nullopt;
      auto name = image.String(strtab + a->vna_name);
      if (!name) return std::nullopt;
      names.push_back(*name);
      if (a->vna_next == 0) break;
      aux += a->vna_next;
    }
    if (need->vn_next == 0) break;
    offset += need->vn_next;
  }
  return names;
}

}  // namespace

bool LooksLikeElf(std::string_view bytes) {
  return bytes.size() >= SELFMAG && std::memcmp(bytes.data(), ELFMAG, SELFMAG) == 0;
}

Result<ElfInfo> ParseElf(std::string_view bytes, const std::string& name) {
  auto bad = [&](const std::string& why) { return Error::InvalidArgument(name + ": " + why); };
  if (!LooksLikeElf(bytes)) return bad("not an ELF file");
  Image image(bytes);
  auto eh = image.At<Elf64_Ehdr>(0);
  if (!eh || eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB) {
    return bad("not a 64-bit little-endian ELF file (only those can be bundled)");
  }
  ElfInfo info;
  info.arch = ArchName(eh->e_machine);
  info.shared_object = eh->e_type == ET_DYN;
  Loaded loaded;
  for (uint16_t i = 0; i < eh->e_phnum; ++i) {
    auto ph = image.At<Elf64_Phdr>(eh->e_phoff + uint64_t{i} * eh->e_phentsize);
    if (!ph) return bad("program header " + std::to_string(i) + " lies outside the file");
    if (ph->p_type == PT_LOAD) loaded.loads.push_back(*ph);
    if (ph->p_type == PT_DYNAMIC) loaded.dynamic = *ph;
  }
  if (!loaded.dynamic) return info;  // statically linked: needs nothing
  auto dyn = ReadDynamic(image, *loaded.dynamic);
  if (!dyn) return bad("dynamic section lies outside the file");
  auto strtab = dyn->strtab ? OffsetOf(loaded, *dyn->strtab) : std::nullopt;
  if (!strtab) return bad("dynamic string table not found");
  auto str = [&](uint64_t off) { return image.String(*strtab + off); };
  for (uint64_t off : dyn->needed) {
    auto s = str(off);
    if (!s) return bad("a NEEDED entry lies outside the file");
    info.needed.push_back(*s);
  }
  if (dyn->soname) info.soname = str(*dyn->soname).value_or("");
  auto path_off = dyn->runpath ? dyn->runpath : dyn->rpath;
  if (path_off) {
    for (auto& part : Split(str(*path_off).value_or(""), ':')) {
      if (!part.empty()) info.runpath.push_back(part);
    }
  }
  if (dyn->verneed) {
    auto off = OffsetOf(loaded, *dyn->verneed);
    auto names = off ? ReadVersionNeeds(image, *off, dyn->verneed_count, *strtab) : std::nullopt;
    if (!names) return bad("version-needs table lies outside the file");
    for (auto& n : *names) {
      if (n.rfind("GLIBC_", 0) == 0) info.glibc_versions.push_back(n);
    }
  }
  return info;
}

std::string NewestGlibcVersion(const std::vector<std::string>& versions) {
  std::vector<int> best;
  std::string best_text;
  for (const auto& v : versions) {
    if (v.rfind("GLIBC_", 0) != 0) continue;
    std::string text = v.substr(6);
    // GLIBC_PRIVATE, or numbers no glibc has (the text comes from the file): not a version.
    auto parts = ParseVersionNumbers(text);
    if (parts && *parts > best) {
      best = std::move(*parts);
      best_text = text;
    }
  }
  return best_text;
}

}  // namespace skydb::bundle
