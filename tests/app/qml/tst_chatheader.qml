import QtQuick
import QtQuick.Controls
import QtTest
import "../../../ui"

// The chat header at the smallest window (720 px less the sidebar): the conversation title
// stays readable next to the backend, the overlay button and a long model name.
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
        property var installedModels: []
        property string backend: "vulkan"
        property string device: "llvmpipe (LLVM 15.0.6, 256 bits)"
        property string lastStats: "12.5 tok/s"
        function refreshModels() {}
        function stop() {}
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
        perf: null
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
    }
}
