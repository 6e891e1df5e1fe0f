import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The window's actions and menus: Escape stops a generation, Ctrl+, opens the settings, the
// menus show each shortcut and are wide enough for their longest entry.
Item {
    id: root
    width: 700
    height: 500

    QtObject {
        id: mockChat
        property bool generating: false
        property int currentConversationId: 3
        property int stops: 0
        function stop() { stops += 1 }
        function regenerate() {}
        function newConversation() {}
    }
    QtObject {
        id: mockInference
        property bool modelLoaded: true
    }

    AppActions {
        id: actions
        chat: mockChat
        inference: mockInference
        property int settingsOpened: 0
        onSettingsRequested: settingsOpened += 1
    }

    AppMenu {
        id: menu
        Action { text: "A plain entry with a rather long name to show" }
        AppMenuItem { action: actions.exportMarkdown }
        AppMenuItem { action: actions.settings }
        AppMenuItem { action: actions.stop }
    }

    TestCase {
        name: "AppActions"
        when: windowShown

        function findAll(item, name, out) {
            if (item.objectName === name) out.push(item)
            for (let i = 0; i < item.children.length; ++i) findAll(item.children[i], name, out)
            return out
        }

        function test_escapeStopsAGeneration() {
            mockChat.stops = 0
            mockChat.generating = false
            keyClick(Qt.Key_Escape)
            compare(mockChat.stops, 0, "nothing to stop")
            mockChat.generating = true
            keyClick(Qt.Key_Escape)
            compare(mockChat.stops, 1)
            mockChat.generating = false
        }

        function test_ctrlCommaOpensSettings() {
            const before = actions.settingsOpened
            keyClick(Qt.Key_Comma, Qt.ControlModifier)
            compare(actions.settingsOpened, before + 1)
        }

        function test_menuShowsShortcutsUntruncated() {
            menu.open()
            tryCompare(menu, "opened", true)
            const texts = findAll(menu.contentItem, "menuItemText", [])
            const keys = findAll(menu.contentItem, "menuItemShortcut", [])
            compare(texts.length, 4)
            compare(texts[1].text, "Export as Markdown…")
            compare(keys[2].text, "Ctrl+,")
            compare(keys[3].text, "Esc")
            verify(!keys[0].visible, "no shortcut, no label")
            for (let i = 0; i < texts.length; ++i)
                verify(texts[i].width >= texts[i].implicitWidth - 0.5,
                       texts[i].text + " is cut: " + texts[i].width + " < " + texts[i].implicitWidth)
            menu.close()
        }
    }
}
