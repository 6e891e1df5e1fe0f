import QtQuick
import QtQuick.Controls.Material
import QtTest
import Ember

// Code blocks: syntax highlighting, a Copy that copies the plain code, and a Copy button that
// is readable in the light and the dark theme.
Item {
    id: root
    width: 600
    height: 400

    Column {
        width: parent.width
        Item {
            width: parent.width
            height: 150
            Material.theme: Material.Light
            CodeBlock {
                id: lightBlock; width: parent.width; code: "int x = 1;"; language: "c"
                fontSize: 40; highlighter: fixture.blocks("")
            }
        }
        Item {
            width: parent.width
            height: 150
            Material.theme: Material.Dark
            CodeBlock { id: darkBlock; width: parent.width; code: "int x = 1;"; language: "c" }
        }
    }

    TextEdit { id: pasteTarget; textFormat: TextEdit.PlainText }
    Theme { id: theme }

    TestCase {
        name: "CodeBlock"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }
        function luminance(c) {
            const f = (v) => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)
            return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b)
        }
        function contrast(a, b) {
            const la = luminance(a), lb = luminance(b)
            return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05)
        }

        // Types and numbers in the theme's colours: the C++ highlighter is attached to the text.
        function test_blockIsHighlightedAndCopiesPlainText() {
            const shown = child(lightBlock, "codeText")
            verify(shown.visible)
            compare(shown.textFormat, TextEdit.PlainText)
            compare(shown.getText(0, shown.length), "int x = 1;")
            waitForRendering(shown)
            const img = grabImage(shown)
            let type = 0, number = 0
            for (let x = 0; x < shown.width; ++x)
                for (let y = 0; y < shown.height; ++y) {
                    const c = String(img.pixel(x, y))
                    if (c === String(theme.codeType)) ++type
                    if (c === String(theme.codeNumber)) ++number
                }
            verify(type > 20, "type pixels (int): " + type)
            verify(number > 5, "number pixels: " + number)
            mouseClick(child(lightBlock, "copyCodeButton"))
            pasteTarget.text = ""
            pasteTarget.paste()
            compare(pasteTarget.text, "int x = 1;")
        }

        // Without a highlighter (darkBlock) the code is plain: no keyword colour.
        function test_plainWithoutHighlighter() {
            const shown = child(darkBlock, "codeText")
            waitForRendering(shown)
            const img = grabImage(shown)
            let keyword = 0
            for (let x = 0; x < shown.width; ++x)
                for (let y = 0; y < shown.height; ++y)
                    if (String(img.pixel(x, y)) === String(theme.codeType)) ++keyword
            verify(keyword < 5, "type pixels: " + keyword)
        }

        function test_copyIsReadableInBothThemes() {
            for (const block of [lightBlock, darkBlock]) {
                const copy = child(block, "copyCodeButton")
                verify(copy.visible)
                const c = copy.contentItem.color
                verify(contrast(c, block.color) >= 4.5, "Copy " + c + " on " + block.color)
            }
        }
    }
}
