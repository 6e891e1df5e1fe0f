#include "reasoning.h"

namespace reasoning {
namespace {

// The length of the longest end of `text` that is the start of `tag` (a tag still arriving).
qsizetype partialTag(QStringView text, QStringView tag) {
    for (qsizetype n = std::min(text.size(), tag.size() - 1); n > 0; --n)
        if (text.right(n) == tag.left(n)) return n;
    return 0;
}

QStringView skipBlankLines(QStringView s) {
    qsizetype i = 0;
    while (i < s.size() && s[i].isSpace()) ++i;
    return s.mid(i);
}

}  // namespace

Parts split(QStringView reply) {
    Parts p;
    const QStringView lead = skipBlankLines(reply);
    if (lead.size() < kOpen.size() && kOpen.startsWith(lead) && !lead.isEmpty()) return p;
    qsizetype inside = -1;
    if (lead.startsWith(kOpen)) {
        inside = reply.size() - lead.size() + kOpen.size();
    } else if (reply.indexOf(kClose) >= 0 && reply.indexOf(kOpen) < 0) {
        // Opened by the template and stored without its tag (an older reply, an import).
        inside = 0;
    }
    if (inside < 0) {
        p.answer = reply;
        return p;
    }
    p.present = true;
    const qsizetype close = reply.indexOf(kClose, inside);
    if (close < 0) {
        const QStringView rest = reply.mid(inside);
        p.reasoning = rest.left(rest.size() - partialTag(rest, kClose));
        return p;
    }
    p.closed = true;
    p.reasoning = reply.mid(inside, close - inside);
    p.answer = skipBlankLines(reply.mid(close + kClose.size()));
    return p;
}

QString withoutReasoning(const QString& reply) {
    const Parts p = split(reply);
    if (!p.present) return reply;
    return p.closed ? p.answer.toString() : QString();
}

}  // namespace reasoning
