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

    // The real controllers over a fake engine: a reply runs until it is stopped.
    readonly property Settings settings: fixture.settings()
    readonly property InferenceController inference: fixture.inference()
    readonly property ChatController chat: fixture.chat(inference, settings)

    AppActions {
        id: actions
        chat: root.chat
        inference: root.inference
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
            fixture.loadModel(root.inference, "/models/fake.gguf")
            fixture.loadStep(1)
            tryCompare(root.inference, "modelLoaded", true, 30000)
            verify(!actions.stop.enabled, "nothing to stop")
            keyClick(Qt.Key_Escape)
            verify(root.chat.send("Hello"))
            tryVerify(() => fixture.engineGenerating(), 30000, "the reply is under way")
            verify(root.chat.generating)
            verify(actions.stop.enabled)
            verify(!actions.regenerate.enabled, "not while a reply is under way")
            keyClick(Qt.Key_Escape)
            tryCompare(root.chat, "generating", false, 30000)
            verify(actions.exportMarkdown.enabled, "the conversation exists now")
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
