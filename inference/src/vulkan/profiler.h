// GPU time per dispatch (EMBER_VULKAN_PROFILE=1): a timestamp after every dispatch of a
// command buffer, summed per label over every submission; EMBER_VULKAN_PROFILE=span times each
// submission whole, with the host's time around it (forward.cpp). For diagnosis only: the
// timestamps themselves cost a little, and results are printed to stderr when the runner is
// destroyed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vulkan/device.h"

namespace ember::vulkan {

class QueryPool : public Owned<VkQueryPool> {
public:
    using Owned::Owned;
    static Result<QueryPool> create(const Device& device, uint32_t count);
};

// Totals of one phase (e.g. decode steps) by label.
struct ProfileTotals {
    struct Entry {
        double ns = 0;
        uint64_t calls = 0;
    };
    std::map<std::string, Entry> by_label;
    uint64_t submissions = 0;
    uint64_t left_out = 0;  // submissions made while profiling was off (Session::set_profiling)
};

// The timestamps of one command buffer; recorded once, collected after each submission.
class Profiler {
public:
    static Result<Profiler> create(const Device& device, uint32_t max_dispatches);
    // Starts recording: resets the queries and writes the first timestamp.
    void begin(VkCommandBuffer cmd);
    // A timestamp once every earlier command has finished, charged to `label`.
    void mark(VkCommandBuffer cmd, const std::string& label);
    // After the submission has finished: adds each interval to its label in `into`.
    Status collect(ProfileTotals& into);

private:
    QueryPool m_pool;
    uint32_t m_capacity = 0;
    double m_period_ns = 1;
    uint64_t m_mask = ~0ull;
    std::vector<std::string> m_labels;  // label of interval i (between queries i and i + 1)
    bool m_overflow = false;
};

// A table of the totals: label, calls, GPU time per submission, share; heaviest first. Its
// header says how many submissions it counts and how many it left out.
std::string format_profile(const std::string& phase, const ProfileTotals& t);

}  // namespace ember::vulkan
