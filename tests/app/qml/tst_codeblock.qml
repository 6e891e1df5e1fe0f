import QtQuick
import QtQuick.Controls.Material
import QtTest
import "../../../ui"
import "../../../ui/highlight.js" as Highlight

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
            CodeBlock { id: lightBlock; width: parent.width; code: "int x = 1;"; language: "c" }
        }
        Item {
            width: parent.width
            height: 150
            Material.theme: Material.Dark
            CodeBlock { id: darkBlock; width: parent.width; code: "int x = 1;"; language: "c" }
        }
    }

    TextEdit { id: pasteTarget; textFormat: TextEdit.PlainText }

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

        function kinds(code, language) {
            return Highlight.tokens(code, language).filter(t => t.kind).map(t => t.kind + ":" + t.text)
        }

        function test_tokensKeepTheText() {
            const code = "int main() {\n  // say hi\n  printf(\"hi %d\\n\", 0x1F); /* done */\n  return 2.5e3;\n}"
            compare(Highlight.tokens(code, "c").map(t => t.text).join(""), code)
            compare(kinds(code, "c"), ["keyword:int", "comment:// say hi", "string:\"hi %d\\n\"",
                                        "number:0x1F", "comment:/* done */", "keyword:return", "number:2.5e3"])
            compare(kinds("# note\nx = 'a' if y else None", "python"),
                    ["comment:# note", "string:'a'", "keyword:if", "keyword:else", "keyword:None"])
            compare(kinds("#include <x.h>", "c"), [],
                    "'#' starts no comment in C")
        }

        function test_htmlIsEscapedAndColoured() {
            const html = Highlight.toHtml("if (a < b) return \"<b>\";", "js",
                                          { keyword: "#111111", string: "#222222", comment: "#333333", number: "#444444" })
            verify(html.indexOf("<span style=\"color:#111111\">if</span>") >= 0, html)
            verify(html.indexOf("a &lt; b") >= 0, html)
            verify(html.indexOf("&quot;&lt;b&gt;&quot;") >= 0, html)
            verify(html.indexOf("<b>") < 0, "no markup from the code itself")
        }

        function test_blockIsHighlightedAndCopiesPlainText() {
            const shown = child(lightBlock, "codeHighlighted")
            verify(shown.visible)
            compare(shown.textFormat, TextEdit.RichText)
            verify(shown.text.indexOf("color:") >= 0, "coloured spans")
            compare(shown.getText(0, shown.length), "int x = 1;")
            mouseClick(child(lightBlock, "copyCodeButton"))
            pasteTarget.text = ""
            pasteTarget.paste()
            compare(pasteTarget.text, "int x = 1;")
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
