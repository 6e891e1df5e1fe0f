// Bottom-up pair merging shared by SentencePiece (pairs ordered by score) and byte-level BPE
// (pairs ordered by merge rank): a linked list of pieces and a priority queue of candidate pairs.
#pragma once

#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace ember::tok {

struct MergePiece {
    int prev, next;
    uint32_t begin, len;  // len 0: merged into its left neighbour
};

// Splits text into UTF-8 characters and merges adjacent pieces, the highest priority first
// (ties: leftmost), until no pair has a priority. priority(left, right) gives the pair's
// priority as an optional<double>, or nullopt when the pair cannot merge.
// Returns the pieces; walk them from index 0 through `next` (skipping nothing: merged-away
// pieces are unlinked).
template <class Priority>
std::vector<MergePiece> merge_pieces(std::string_view text, const Priority& priority) {
    struct Pair {
        double priority;
        int left, right;
        uint32_t len;
    };
    struct Order {
        bool operator()(const Pair& a, const Pair& b) const {
            return a.priority < b.priority || (a.priority == b.priority && a.left > b.left);
        }
    };
    std::vector<MergePiece> sym;
    sym.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        const auto len = uint32_t(utf8_char_len(text, pos));
        const int idx = int(sym.size());
        sym.push_back({idx - 1, pos + len < text.size() ? idx + 1 : -1, uint32_t(pos), len});
        pos += len;
    }
    std::priority_queue<Pair, std::vector<Pair>, Order> q;
    auto push = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const MergePiece& l = sym[size_t(left)];
        const MergePiece& r = sym[size_t(right)];
        const std::optional<double> p =
            priority(text.substr(l.begin, l.len), text.substr(r.begin, r.len));
        if (p) q.push({*p, left, right, l.len + r.len});
    };
    for (int i = 1; i < int(sym.size()); ++i) push(i - 1, i);
    while (!q.empty()) {
        const Pair b = q.top();
        q.pop();
        MergePiece& l = sym[size_t(b.left)];
        MergePiece& r = sym[size_t(b.right)];
        // Stale: one side was merged away or has grown since this pair was queued.
        if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) sym[size_t(r.next)].prev = b.left;
        push(l.prev, b.left);
        push(b.left, l.next);
    }
    return sym;
}

}  // namespace ember::tok
