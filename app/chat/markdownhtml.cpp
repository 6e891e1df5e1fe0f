#include "markdownhtml.h"

#include <md4c.h>

#include <QByteArray>

namespace markdown {
namespace {

// State of one md4c parse: the HTML written so far.
struct Writer {
    const HtmlOptions& options;
    QString out;
    int imageDepth = 0;  // inside an image, text is its description (shown as the link)

    void text(const char* s, MD_SIZE n) { out += escapeHtml(QString::fromUtf8(s, n)); }
    void attribute(const MD_ATTRIBUTE& a) {
        out += escapeHtml(QString::fromUtf8(a.text, static_cast<qsizetype>(a.size)));
    }
    void link(const MD_ATTRIBUTE& href) {
        out += QStringLiteral("<a href=\"");
        attribute(href);
        out += '"';
        if (!options.linkColour.isEmpty())
            out += QStringLiteral(" style=\"color:%1\"").arg(escapeHtml(options.linkColour));
        out += '>';
    }
};

// Qt gives paragraphs and lists 12 px above and below; each block is its own text item, spaced
// by the chat view, so blocks get none.
constexpr const char* kTight = "margin-top:0; margin-bottom:0";

const char* alignName(MD_ALIGN a) {
    switch (a) {
        case MD_ALIGN_CENTER:
            return "center";
        case MD_ALIGN_RIGHT:
            return "right";
        default:
            return "left";
    }
}

int enterBlock(MD_BLOCKTYPE type, void* detail, void* user) {
    auto& w = *static_cast<Writer*>(user);
    switch (type) {
        case MD_BLOCK_DOC:
            break;
        case MD_BLOCK_QUOTE:
            w.out += QStringLiteral("<blockquote style=\"%1\">").arg(kTight);
            break;
        case MD_BLOCK_UL:
            w.out += QStringLiteral("<ul style=\"%1\">").arg(kTight);
            break;
        case MD_BLOCK_OL: {
            const auto* d = static_cast<MD_BLOCK_OL_DETAIL*>(detail);
            w.out += QStringLiteral("<ol start=\"%1\" style=\"%2\">").arg(d->start).arg(kTight);
            break;
        }
        case MD_BLOCK_LI: {
            const auto* d = static_cast<MD_BLOCK_LI_DETAIL*>(detail);
            w.out += QStringLiteral("<li>");
            if (d->is_task)
                w.out +=
                    (d->task_mark == ' ') ? QStringLiteral("\u2610 ") : QStringLiteral("\u2611 ");
            break;
        }
        case MD_BLOCK_HR:
            w.out += QStringLiteral("<hr/>");
            break;
        case MD_BLOCK_H:
            w.out += QStringLiteral("<h%1 style=\"margin-top:0; margin-bottom:4px\">")
                         .arg(static_cast<MD_BLOCK_H_DETAIL*>(detail)->level);
            break;
        case MD_BLOCK_CODE:
            w.out += QStringLiteral("<pre>");
            break;
        case MD_BLOCK_HTML:
        case MD_BLOCK_P:
            w.out += QStringLiteral("<p style=\"%1\">").arg(kTight);
            break;
        case MD_BLOCK_TABLE:
            w.out += QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"%1\">")
                         .arg(w.options.tableCellPadding);
            break;
        case MD_BLOCK_THEAD:
        case MD_BLOCK_TBODY:
            break;
        case MD_BLOCK_TR:
            w.out += QStringLiteral("<tr>");
            break;
        case MD_BLOCK_TH:
        case MD_BLOCK_TD: {
            const auto* d = static_cast<MD_BLOCK_TD_DETAIL*>(detail);
            w.out += QStringLiteral("<%1 align=\"%2\">")
                         .arg(type == MD_BLOCK_TH ? "th" : "td", alignName(d->align));
            break;
        }
    }
    return 0;
}

int leaveBlock(MD_BLOCKTYPE type, void* detail, void* user) {
    auto& w = *static_cast<Writer*>(user);
    switch (type) {
        case MD_BLOCK_QUOTE:
            w.out += QStringLiteral("</blockquote>");
            break;
        case MD_BLOCK_UL:
            w.out += QStringLiteral("</ul>");
            break;
        case MD_BLOCK_OL:
            w.out += QStringLiteral("</ol>");
            break;
        case MD_BLOCK_LI:
            w.out += QStringLiteral("</li>");
            break;
        case MD_BLOCK_H:
            w.out += QStringLiteral("</h%1>").arg(static_cast<MD_BLOCK_H_DETAIL*>(detail)->level);
            break;
        case MD_BLOCK_CODE:
            w.out += QStringLiteral("</pre>");
            break;
        case MD_BLOCK_HTML:
        case MD_BLOCK_P:
            w.out += QStringLiteral("</p>");
            break;
        case MD_BLOCK_TABLE:
            w.out += QStringLiteral("</table>");
            break;
        case MD_BLOCK_TR:
            w.out += QStringLiteral("</tr>");
            break;
        case MD_BLOCK_TH:
            w.out += QStringLiteral("</th>");
            break;
        case MD_BLOCK_TD:
            w.out += QStringLiteral("</td>");
            break;
        default:
            break;
    }
    return 0;
}

int enterSpan(MD_SPANTYPE type, void* detail, void* user) {
    auto& w = *static_cast<Writer*>(user);
    if (w.imageDepth > 0) return 0;
    switch (type) {
        case MD_SPAN_EM:
            w.out += QStringLiteral("<i>");
            break;
        case MD_SPAN_STRONG:
            w.out += QStringLiteral("<b>");
            break;
        case MD_SPAN_U:
            w.out += QStringLiteral("<u>");
            break;
        case MD_SPAN_DEL:
            w.out += QStringLiteral("<s>");
            break;
        case MD_SPAN_CODE:
            w.out += QStringLiteral("<code>");
            break;
        case MD_SPAN_A:
            w.link(static_cast<MD_SPAN_A_DETAIL*>(detail)->href);
            break;
        case MD_SPAN_IMG:
            // Qt would fetch the image: the description links to it instead.
            w.link(static_cast<MD_SPAN_IMG_DETAIL*>(detail)->src);
            ++w.imageDepth;
            return 0;
        default:
            break;
    }
    return 0;
}

int leaveSpan(MD_SPANTYPE type, void*, void* user) {
    auto& w = *static_cast<Writer*>(user);
    if (type == MD_SPAN_IMG) {
        --w.imageDepth;
        w.out += QStringLiteral("</a>");
        return 0;
    }
    if (w.imageDepth > 0) return 0;
    switch (type) {
        case MD_SPAN_EM:
            w.out += QStringLiteral("</i>");
            break;
        case MD_SPAN_STRONG:
            w.out += QStringLiteral("</b>");
            break;
        case MD_SPAN_U:
            w.out += QStringLiteral("</u>");
            break;
        case MD_SPAN_DEL:
            w.out += QStringLiteral("</s>");
            break;
        case MD_SPAN_CODE:
            w.out += QStringLiteral("</code>");
            break;
        case MD_SPAN_A:
            w.out += QStringLiteral("</a>");
            break;
        default:
            break;
    }
    return 0;
}

int onText(MD_TEXTTYPE type, const MD_CHAR* text, MD_SIZE size, void* user) {
    auto& w = *static_cast<Writer*>(user);
    switch (type) {
        case MD_TEXT_NULLCHAR:
            w.out += QChar(0xFFFD);
            break;
        case MD_TEXT_BR:
            w.out += QStringLiteral("<br/>");
            break;
        case MD_TEXT_SOFTBR:
            w.out += w.options.hardBreaks ? QStringLiteral("<br/>") : QStringLiteral(" ");
            break;
        case MD_TEXT_ENTITY:
            // An entity such as &amp; or &#123; is valid HTML as it is.
            w.out += QString::fromUtf8(text, size);
            break;
        default:  // normal text, code, raw HTML (shown as text), LaTeX
            w.text(text, size);
            break;
    }
    return 0;
}

}  // namespace

QString escapeHtml(QStringView text) {
    QString out;
    out.reserve(text.size() + text.size() / 8);
    for (const QChar c : text) {
        switch (c.unicode()) {
            case '&':
                out += QStringLiteral("&amp;");
                break;
            case '<':
                out += QStringLiteral("&lt;");
                break;
            case '>':
                out += QStringLiteral("&gt;");
                break;
            case '"':
                out += QStringLiteral("&quot;");
                break;
            default:
                out += c;
        }
    }
    return out;
}

QString toHtml(QStringView markdown, const HtmlOptions& options) {
    const QByteArray utf8 = markdown.toUtf8();
    Writer writer{options, {}};
    MD_PARSER parser{};
    parser.abi_version = 0;
    // GitHub's dialect; raw HTML is text; indented code blocks are off because models indent
    // list continuations, never code (their code is fenced).
    parser.flags = MD_DIALECT_GITHUB | MD_FLAG_NOHTML | MD_FLAG_NOINDENTEDCODEBLOCKS;
    parser.enter_block = enterBlock;
    parser.leave_block = leaveBlock;
    parser.enter_span = enterSpan;
    parser.leave_span = leaveSpan;
    parser.text = onText;
    if (md_parse(utf8.constData(), static_cast<MD_SIZE>(utf8.size()), &parser, &writer) != 0)
        return escapeHtml(markdown);  // md4c fails only when out of memory: show the text
    return writer.out;
}

}  // namespace markdown
