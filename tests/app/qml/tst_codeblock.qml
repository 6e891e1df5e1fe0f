import QtQuick
import QtQuick.Controls.Material
import QtTest
import "../../../ui"

// Code blocks: the Copy button is readable in the light and the dark theme.
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
