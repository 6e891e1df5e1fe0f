#include "fetch_catalog.h"

#include <nlohmann/json.hpp>
#include <set>

namespace ember::fetch {

Result<std::vector<CatalogItem>> parse_catalog(const std::string& json) {
    auto bad = [](const std::string& message) { return make_error("fetch.catalog", message); };
    const nlohmann::json root = nlohmann::json::parse(json, nullptr, false);
    if (!root.is_object()) return bad("the catalog is not a JSON object");
    if (root.value("version", nlohmann::json()) != 1)
        return bad("unsupported catalog version (expected 1)");
    const auto models = root.find("models");
    if (models == root.end() || !models->is_array()) return bad("the catalog has no models array");
    std::vector<CatalogItem> items;
    std::set<std::string> ids;
    for (size_t i = 0; i < models->size(); i++) {
        const nlohmann::json& o = (*models)[i];
        if (!o.is_object()) return bad("model " + std::to_string(i) + " is not an object");
        auto str = [&](const char* key) {
            auto it = o.find(key);
            return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        auto num = [&](const char* key) {
            auto it = o.find(key);
            return it != o.end() && it->is_number() ? int64_t(it->get<double>()) : int64_t(0);
        };
        CatalogItem e;
        e.id = str("id");
        const std::string where = "model " + std::to_string(i) + " (" + e.id + ")";
        if (e.id.empty() || !ids.insert(e.id).second)
            return bad(where + ": missing or duplicate id");
        e.name = str("name");
        e.filename = str("filename");
        if (e.filename.size() < 6 || e.filename.compare(e.filename.size() - 5, 5, ".gguf") != 0 ||
            e.filename.find_first_of("/\\") != std::string::npos || e.filename[0] == '.')
            return bad(where + ": filename must be a plain *.gguf name, got '" + e.filename + "'");
        e.url = str("url");
        if (e.url.rfind("https://", 0) != 0) return bad(where + ": url must be https");
        for (const char* algo : {"sha256", "md5"}) {
            if (!o.contains(algo) || e.checksum.is_set()) continue;
            auto c = parse_checksum(algo, str(algo));
            if (!c.ok()) return bad(where + ": " + c.error().message);
            e.checksum = *c;
        }
        e.size = num("size");
        e.approx_size = num("approx_size");
        if (e.size <= 0 && e.approx_size <= 0)
            return bad(where + ": size (exact bytes) or approx_size must be positive");
        e.architecture = str("architecture");
        e.quantization = str("quantization");
        e.supported = o.value("supported", false);
        e.reason = str("reason");
        items.push_back(std::move(e));
    }
    return items;
}

}  // namespace ember::fetch
