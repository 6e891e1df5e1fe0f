import QtQuick
import QtQuick.Controls

// The model button of the chat header: lists the installed models and opens a file picker.
Button {
    id: root
    property var chat
    property var inference
    signal openFileRequested()
    signal manageModelsRequested()

    objectName: "modelMenuButton"
    flat: true
    text: inference && inference.loading ? qsTr("Loading… %1%").arg(Math.round(inference.loadProgress * 100))
        : inference && inference.modelLoaded ? inference.modelName + "  ▾"
        : qsTr("Choose a model  ▾")
    onClicked: {
        inference.refreshModels()
        menu.open()
    }

    Menu {
        id: menu
        y: root.height
        Instantiator {
            model: root.inference ? root.inference.installedModels : []
            delegate: MenuItem {
                required property var modelData
                text: modelData.name
                checkable: true
                checked: root.inference.modelPath === modelData.path
                enabled: !root.inference.loading && !root.inference.generating
                onTriggered: root.chat.loadModel("file://" + modelData.path)
            }
            onObjectAdded: (index, object) => menu.insertItem(index, object)
            onObjectRemoved: (index, object) => menu.removeItem(object)
        }
        MenuItem {
            enabled: false
            visible: root.inference && root.inference.installedModels.length === 0
            height: visible ? implicitHeight : 0
            text: qsTr("No models in %1").arg(root.inference ? root.inference.modelsDirectory : "")
        }
        MenuSeparator {}
        MenuItem {
            objectName: "manageModelsItem"
            text: qsTr("Download and manage models…")
            onTriggered: root.manageModelsRequested()
        }
        MenuItem {
            text: qsTr("Open model file…")
            onTriggered: root.openFileRequested()
        }
        MenuItem {
            text: qsTr("Unload model")
            enabled: root.inference && root.inference.modelLoaded && !root.inference.generating
            onTriggered: root.inference.unloadModel()
        }
    }
}
