// One Markdown block as the rich text (HTML subset) that Qt's text items show, parsed with md4c
// (the parser Qt's own Markdown support uses) in GitHub's dialect, as chat apps render replies.
#pragma once

#include <QString>
#include <QStringView>

namespace markdown {

struct HtmlOptions {
    // Single newlines stay line breaks (poems, addresses, steps), as in the other chat apps:
    // CommonMark's "hard breaks" for chat.
    bool hardBreaks = true;
    int tableCellPadding = 6;  // pixels; Qt lays tables out with none
    QString linkColour;        // CSS colour for links; empty: the text item's default
};

// Raw HTML in the Markdown is shown as text (a reply never injects markup), images as links to
// their source, task list items with a check box character.
QString toHtml(QStringView markdown, const HtmlOptions& options = {});

// &, <, > and " escaped for HTML text and attribute values.
QString escapeHtml(QStringView text);

}  // namespace markdown
