import QtQuick
import QtQuick.Controls
import QtTest
import Ember

// The chat pane: at the smallest window (720 px less the sidebar) the conversation title stays
// readable next to the backend, the overlay button and a long model name; the performance
// overlay is docked beside the messages and never covers them.
Item {
    id: root
    width: 460
    height: 480

    // The real controllers (over a fake engine), monitor and settings.
    readonly property Settings settings: fixture.settings()
    readonly property InferenceController inference: fixture.inference()
    readonly property ChatController chat: fixture.chat(inference, settings)
    readonly property PerfMonitor perf: fixture.perf()

    ChatPane {
        id: pane
        anchors.fill: parent
        chat: root.chat
        inference: root.inference
        settings: root.settings
        perf: root.perf
    }

    TestCase {
        name: "ChatHeader"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }

        // A long model name, and a conversation with a title.
        function initTestCase() {
            root.settings.perfOverlay = false
            root.settings.fontSize = 14
            fixture.loadModel(root.inference, "/models/a-model-with-a-rather-long-file-name.Q4_K_M.gguf")
            fixture.loadStep(1)
            tryCompare(root.inference, "modelLoaded", true, 30000)
            verify(root.chat.send("Poem about the sea"))
            tryVerify(() => fixture.engineGenerating(), 30000, "the reply is under way")
            root.chat.stop()
            tryCompare(root.chat, "generating", false, 30000)
            compare(root.chat.currentTitle, "Poem about the sea")
        }

        function test_titleFitsAtTheMinimumWidth() {
            const title = child(pane.header, "conversationTitle")
            verify(title.visible)
            verify(title.width >= Math.min(title.implicitWidth, 140),
                   "title " + title.width + " px of " + title.implicitWidth)
            const button = child(pane.header, "modelMenuButton")
            verify(button.x + button.width <= pane.header.width, "the model button is inside")
        }

        function test_overlayIsDockedBesideTheMessages() {
            root.width = 900
            root.settings.perfOverlay = true
            const overlay = child(pane, "perfOverlay")
            const view = child(pane, "chatView")
            verify(overlay.visible)
            const beside = () => overlay.width > 0 && view.width > 0
                && overlay.mapToItem(root, 0, 0).x >= view.mapToItem(root, 0, 0).x + view.width
            tryVerify(beside, 2000, "the overlay starts at " + overlay.mapToItem(root, 0, 0).x
                      + ", the messages end at " + (view.mapToItem(root, 0, 0).x + view.width))
            verify(view.width >= 400, "the messages keep their room: " + view.width)
            root.settings.perfOverlay = false
            tryVerify(() => view.width > 800, 2000, "the messages take the whole width again")
            root.width = 460
        }
    }
}
