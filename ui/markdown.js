.pragma library
// Splits a Markdown message into prose and fenced code segments, so that code can be shown
// in its own block (monospace, Copy button). An unterminated fence (still streaming) runs to
// the end of the text.

function split(text) {
    var segments = [];
    var lines = (text || "").split("\n");
    var buffer = [];
    var fence = "";
    var language = "";

    function flush(type) {
        var body = buffer.join("\n");
        buffer = [];
        if (type === "code")
            segments.push({ type: "code", text: body, language: language });
        else if (body.trim().length > 0)
            segments.push({ type: "prose", text: body, language: "" });
    }

    for (var i = 0; i < lines.length; ++i) {
        var line = lines[i];
        if (fence === "") {
            var open = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)\s*$/.exec(line);
            if (open) {
                flush("prose");
                fence = open[1];
                language = open[2];
                continue;
            }
        } else {
            var close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
            if (close && close[1][0] === fence[0] && close[1].length >= fence.length) {
                flush("code");
                fence = "";
                language = "";
                continue;
            }
        }
        buffer.push(line);
    }
    flush(fence === "" ? "prose" : "code");
    return segments;
}

// Chat messages keep their line breaks (poems, addresses, steps), as in the other chat apps:
// each newline between two non-blank lines of prose becomes a CommonMark hard break (two
// trailing spaces). A break at the end of a block (a heading, a list item before the next
// item, a table row) is ignored by CommonMark, so structure is unchanged.
function hardBreaks(text) {
    var lines = (text || "").split("\n");
    for (var i = 0; i + 1 < lines.length; ++i) {
        if (lines[i].trim().length > 0 && lines[i + 1].trim().length > 0 && !/ {2}$|\\$/.test(lines[i]))
            lines[i] = lines[i] + "  ";
    }
    return lines.join("\n");
}

// Links in `colour` (Qt draws Markdown links in a fixed blue that is unreadable on a dark
// background): [label](url) and bare http(s) URLs become HTML links with that colour. Inline
// code (`...`) is left as it is.
function colourLinks(text, colour) {
    var style = " style=\"color:" + colour + "\"";
    function escapeAttr(s) { return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;"); }
    return (text || "").split(/(`+[^`]*`+)/).map(function (part, i) {
        if (i % 2 === 1) return part;  // a code span
        part = part.replace(/(^|[^!\\])\[([^\[\]\n]+)\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)/g,
            function (all, before, label, url) {
                return before + "<a href=\"" + escapeAttr(url) + "\"" + style + ">" + label + "</a>";
            });
        return part.replace(/(^|[\s(])<?(https?:\/\/[^\s<>()"]*[^\s<>()".,;:!?'])>?/g,
            function (all, before, url) {
                return before + "<a href=\"" + escapeAttr(url) + "\"" + style + ">" + url + "</a>";
            });
    }).join("");
}

// GitHub tables as HTML tables with cell padding (Qt lays Markdown tables out with none, the
// text touching the borders). Cells keep bold, italics, inline code and links (in linkColour).
function paddedTables(text, padding, linkColour) {
    var lines = (text || "").split("\n");
    var out = [];
    function cells(line) {
        var t = line.trim();
        if (t[0] === "|") t = t.slice(1);
        if (t[t.length - 1] === "|" && t[t.length - 2] !== "\\") t = t.slice(0, -1);
        return t.replace(/\\\|/g, "\u0001").split("|").map(function (c) {
            return c.trim().replace(/\u0001/g, "|");
        });
    }
    function inline(s) {
        return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
            .replace(/`([^`]+)`/g, "<code>$1</code>")
            .replace(/\*\*([^*]+)\*\*/g, "<b>$1</b>")
            .replace(/(^|[^*])\*([^*]+)\*/g, "$1<i>$2</i>")
            .replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, "<a href=\"$2\"" +
                     (linkColour ? " style=\"color:" + linkColour + "\"" : "") + ">$1</a>");
    }
    var delimiter = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;
    for (var i = 0; i < lines.length; ++i) {
        if (i + 1 < lines.length && lines[i].indexOf("|") >= 0 && delimiter.test(lines[i + 1])) {
            var head = cells(lines[i]);
            var align = cells(lines[i + 1]).map(function (d) {
                return /^:-+:$/.test(d) ? "center" : /-:$/.test(d) ? "right" : "left";
            });
            var html = "<table border=\"1\" cellspacing=\"0\" cellpadding=\"" + padding + "\"><tr>";
            head.forEach(function (c, k) { html += "<th align=\"" + (align[k] || "left") + "\">" + inline(c) + "</th>"; });
            html += "</tr>";
            i += 2;
            while (i < lines.length && lines[i].trim().length > 0 && lines[i].indexOf("|") >= 0) {
                html += "<tr>";
                cells(lines[i]).forEach(function (c, k) { html += "<td align=\"" + (align[k] || "left") + "\">" + inline(c) + "</td>"; });
                html += "</tr>";
                ++i;
            }
            out.push(html + "</table>");
            out.push("");
            --i;
            continue;
        }
        out.push(lines[i]);
    }
    return out.join("\n");
}
