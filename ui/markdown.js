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
