import QtQuick
import QtTest
import "../../../ui/markdown.js" as Markdown

// Rendered links take the theme's colour, not Qt's fixed blue (unreadable in the dark theme);
// tables get cell padding.
Item {
    id: root
    width: 600
    height: 100

    TextEdit {
        id: rendered
        width: 600
        textFormat: TextEdit.MarkdownText
        font.pixelSize: 30
    }

    TestCase {
        name: "MarkdownLinks"
        when: windowShown

        function test_linkPixelsTakeTheColour() {
            rendered.text = Markdown.colourLinks("[linklinklink](https://x.org) https://y.org", "#00ff00")
            waitForRendering(rendered)
            const img = grabImage(rendered)
            let green = 0, blue = 0
            for (let x = 0; x < rendered.width; ++x)
                for (let y = 0; y < rendered.height; y += 2) {
                    const c = String(img.pixel(x, y))
                    if (c === "#00ff00") ++green
                    if (c === "#0000ff") ++blue
                }
            verify(green > 50, "link pixels in the theme colour: " + green)
            compare(blue, 0, "no default blue")
        }

        function test_tablesGetCellPadding() {
            const md = "| Model | Size |\n|---|--:|\n| **tiny** [x](https://x.org) | 260K |"
            rendered.font.pixelSize = 14
            rendered.text = md
            const plainHeight = rendered.contentHeight
            const converted = Markdown.paddedTables(Markdown.hardBreaks(md), 6, "#00ff00")
            verify(converted.indexOf("cellpadding=\"6\"") > 0, converted)
            verify(converted.indexOf("<th align=\"right\">Size</th>") > 0, "alignment kept: " + converted)
            verify(converted.indexOf("<b>tiny</b>") > 0 && converted.indexOf("style=\"color:#00ff00\"") > 0, converted)
            rendered.text = converted
            const text = rendered.getText(0, rendered.length)
            verify(text.indexOf("|") < 0 && text.indexOf("260K") >= 0, JSON.stringify(text))
            verify(rendered.contentHeight >= plainHeight + 12, "padded: " + rendered.contentHeight + " vs " + plainHeight)
            compare(Markdown.paddedTables("a | b\nno table", 6), "a | b\nno table")
            rendered.font.pixelSize = 30
        }
    }
}
