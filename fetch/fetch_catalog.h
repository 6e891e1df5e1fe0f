// The model catalog (resources/catalog.json) as ember-cli pull reads it, without Qt: the
// fields a download needs. The app reads the same file with Qt (app/download/catalog.h).
#pragma once

#include <string>
#include <vector>

#include "fetch_rules.h"

namespace ember::fetch {

struct CatalogItem {
    std::string id, name, filename, url;
    int64_t size = 0;         // exact bytes; 0: not known, the server's size is checked instead
    int64_t approx_size = 0;  // bytes to show when the exact size is not known
    Checksum checksum;        // may be unset: the server's sha256 is used (HEAD)
    std::string architecture, quantization;
    bool supported = false;
    std::string reason;  // why not, when unsupported
    int64_t display_size() const { return size > 0 ? size : approx_size; }
};

// Error "fetch.catalog" names the entry and what is wrong with it.
Result<std::vector<CatalogItem>> parse_catalog(const std::string& json);
const char* builtin_catalog_json();  // resources/catalog.json, compiled in

}  // namespace ember::fetch
