import QtQuick
import QtQuick.Controls.Material
import QtTest
import Ember

// Links take the theme's colour, not Qt's fixed blue (unreadable in the dark theme): the colour
// of the document's characters is checked.
Item {
    id: root
    width: 600
    height: 300
    Material.theme: Material.Dark

    Theme { id: theme; dark: true }
    readonly property ChatController chat: fixture.chat()
    MessageDelegate {
        id: message
        controller: root.chat
        width: 600
        index: 0
        role: "assistant"
        content: "[linklinklink](https://x.org) https://y.org"
        streaming: false
        complete: true
        blocks: fixture.blocks(content)
        reasoningMs: 0
        version: 1
        versions: 1
        model: ""
        tokens: 0
        tokensPerSecond: 0
        ttftMs: 0
        stopReason: ""
        fontSize: 30
    }

    TestCase {
        name: "MarkdownLinks"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        function test_linksTakeTheThemeColour() {
            const prose = child(message, "proseText")
            verify(prose)
            const text = prose.getText(0, prose.length)
            compare(text, "linklinklink https://y.org")
            compare(fixture.colourAt(prose.textDocument, 0), String(theme.link))
            compare(fixture.colourAt(prose.textDocument, text.indexOf("https")), String(theme.link))
            verify(fixture.colourAt(prose.textDocument, text.indexOf(" ")) !== String(theme.link),
                   "the text between the links is not a link")
        }
    }
}
