pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// The installed tab: the models folder's files with their details; delete asks first.
ColumnLayout {
    id: root
    property ModelLibrary library
    property string currentPath   // the loaded model's path
    readonly property alias deleteDialog: confirmDelete
    signal useRequested(string path)

    spacing: 8

    Label {
        Layout.fillWidth: true
        text: qsTr("Models folder: %1").arg(root.library.modelsDirectory)
        color: Material.hintTextColor
        font.pixelSize: 12
        elide: Text.ElideMiddle
    }
    ListView {
        id: list
        objectName: "installedList"
        Layout.fillWidth: true
        Layout.fillHeight: true
        clip: true
        model: root.library.installed
        ScrollBar.vertical: ScrollBar {}
        delegate: InstalledDelegate {
            current: path === root.currentPath
            onUseRequested: (p) => root.useRequested(p)
            onDeleteRequested: (p, f) => confirmDelete.ask(p, f)
        }
        Label {
            anchors.centerIn: parent
            width: parent.width - 48
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            visible: list.count === 0
            text: qsTr("No models yet. Download one from the catalog, or add a .gguf file you already have.")
            color: Material.hintTextColor
        }
    }

    Dialog {
        id: confirmDelete
        objectName: "confirmDeleteDialog"
        property string path
        property string fileName
        function ask(p, f) {
            path = p
            fileName = f
            open()
        }
        parent: Overlay.overlay
        anchors.centerIn: parent
        modal: true
        title: qsTr("Delete %1?").arg(fileName)
        standardButtons: Dialog.Yes | Dialog.Cancel
        Label {
            width: 360
            wrapMode: Text.Wrap
            text: qsTr("The file is removed from the models folder. You can download or add it again later.")
        }
        onAccepted: root.library.deleteModel(path)
    }
}
