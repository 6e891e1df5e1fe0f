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

    ListModel { id: noMessages }
    QtObject {
        id: mockChat
        property string currentTitle: "Poem about the sea"
        property string errorMessage: ""
        property string infoMessage: ""
        property bool generating: false
        property var messages: noMessages
        function send(t) { return true }
        function stop() {}
    }
    QtObject {
        id: mockInference
        property bool loading: false
        property real loadProgress: 0
        property bool modelLoaded: true
        property bool generating: false
        property string modelPath: "/models/a-model-with-a-rather-long-file-name.Q4_K_M.gguf"
        property string modelName: "A MODEL"
        property string modelsDirectory: "/models"
        property string backend: "vulkan"
        property string device: "llvmpipe (LLVM 15.0.6, 256 bits)"
        property string lastStats: "12.5 tok/s"
        function stop() {}
    }
    QtObject {
        id: mockPerf
        property bool generating: true
        property real tokensPerSecond: 40
        property real responseTokensPerSecond: 38
        property int generatedTokens: 64
        property real promptTokensPerSecond: 480
        property int promptTokens: 12
        property int promptTokensTotal: 12
        property real timeToFirstTokenMs: 125
        property int contextUsed: 76
        property int contextSize: 2048
        property bool modelLoaded: true
        property string backend: "cpu"
        property string device: "CPU"
        property string fallbackReason: ""
        property real memoryUsed: 1
        property real memoryBudget: 2
        property string memorySource: "process RSS"
        property var history: [1, 2]
        property int historyCapacity: 120
    }
    QtObject {
        id: mockSettings
        property int fontSize: 14
        property bool perfOverlay: false
    }

    ChatPane {
        id: pane
        anchors.fill: parent
        chat: mockChat
        inference: mockInference
        settings: mockSettings
        perf: mockPerf
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
            mockSettings.perfOverlay = true
            const overlay = child(pane, "perfOverlay")
            const view = child(pane, "chatView")
            verify(overlay.visible)
            const beside = () => overlay.width > 0 && view.width > 0
                && overlay.mapToItem(root, 0, 0).x >= view.mapToItem(root, 0, 0).x + view.width
            tryVerify(beside, 2000, "the overlay starts at " + overlay.mapToItem(root, 0, 0).x
                      + ", the messages end at " + (view.mapToItem(root, 0, 0).x + view.width))
            verify(view.width >= 400, "the messages keep their room: " + view.width)
            mockSettings.perfOverlay = false
            tryVerify(() => view.width > 800, 2000, "the messages take the whole width again")
            root.width = 460
        }
    }
}
