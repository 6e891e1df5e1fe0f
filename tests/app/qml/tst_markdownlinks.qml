import QtQuick
import QtTest
import "../../../ui/markdown.js" as Markdown

// Rendered links take the theme's colour, not Qt's fixed blue (unreadable in the dark theme).
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
    }
}
