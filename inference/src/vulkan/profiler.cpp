#include "vulkan/profiler.h"

#include <algorithm>
#include <cstdio>

namespace ember::vulkan {

Result<QueryPool> QueryPool::create(const Device& device, uint32_t count) {
    VkQueryPoolCreateInfo ci{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    ci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    ci.queryCount = count;
    VkQueryPool p = VK_NULL_HANDLE;
    EMBER_VK_TRY(vkCreateQueryPool(device.handle(), &ci, nullptr, &p), "vkCreateQueryPool");
    return QueryPool(device.handle(), p);
}

Result<Profiler> Profiler::create(const Device& device, uint32_t max_dispatches) {
    const uint32_t bits = device.adapter().timestamp_valid_bits;
    if (bits == 0 || device.limits().timestampPeriod <= 0)
        return make_error("vulkan.no_timestamps", "the compute queue of '" +
                                                      device.adapter().info.name +
                                                      "' has no timestamps to profile with");
    Profiler p;
    p.m_capacity = max_dispatches + 1;
    EMBER_ASSIGN_OR_RETURN(p.m_pool, QueryPool::create(device, p.m_capacity));
    p.m_period_ns = device.limits().timestampPeriod;
    p.m_mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    return p;
}

void Profiler::begin(VkCommandBuffer cmd) {
    m_labels.clear();
    m_overflow = false;
    vkCmdResetQueryPool(cmd, m_pool.handle(), 0, m_capacity);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m_pool.handle(), 0);
}

void Profiler::mark(VkCommandBuffer cmd, const std::string& label) {
    if (m_labels.size() + 1 >= m_capacity) {
        m_overflow = true;
        return;
    }
    m_labels.push_back(label);
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, m_pool.handle(),
                        uint32_t(m_labels.size()));
}

Status Profiler::collect(ProfileTotals& into) {
    if (m_labels.empty()) return {};
    std::vector<uint64_t> ts(m_labels.size() + 1);
    EMBER_VK_TRY(vkGetQueryPoolResults(m_pool.device(), m_pool.handle(), 0, uint32_t(ts.size()),
                                       ts.size() * 8, ts.data(), 8,
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults (profile)");
    for (size_t i = 0; i < m_labels.size(); ++i) {
        auto& e = into.by_label[m_labels[i]];
        e.ns += double((ts[i + 1] - ts[i]) & m_mask) * m_period_ns;
        ++e.calls;
    }
    ++into.submissions;
    if (m_overflow) into.by_label["(dispatches past the profiler's capacity)"].calls++;
    return {};
}

std::string format_profile(const std::string& phase, const ProfileTotals& t) {
    if (t.submissions == 0) return {};
    std::vector<std::pair<std::string, ProfileTotals::Entry>> rows(t.by_label.begin(),
                                                                   t.by_label.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
    double total = 0;
    for (const auto& r : rows) total += r.second.ns;
    const double n = double(t.submissions);
    std::string out;
    char line[256];
    char left[96] = "";
    if (t.left_out)
        std::snprintf(left, sizeof left, " (%llu more made while profiling was off left out)",
                      static_cast<unsigned long long>(t.left_out));
    std::snprintf(line, sizeof line,
                  "GPU profile, %s: %llu submissions%s, %.1f us of GPU time per submission\n",
                  phase.c_str(), static_cast<unsigned long long>(t.submissions), left,
                  total / n / 1e3);
    out += line;
    std::snprintf(line, sizeof line, "  %-34s %9s %12s %10s %6s\n", "label", "calls/sub", "us/sub",
                  "us/call", "share");
    out += line;
    for (const auto& [label, e] : rows) {
        std::snprintf(line, sizeof line, "  %-34s %9.1f %12.2f %10.2f %5.1f%%\n", label.c_str(),
                      double(e.calls) / n, e.ns / n / 1e3,
                      e.calls ? e.ns / double(e.calls) / 1e3 : 0,
                      total > 0 ? 100 * e.ns / total : 0);
        out += line;
    }
    return out;
}

}  // namespace ember::vulkan
